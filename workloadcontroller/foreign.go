package workloadcontroller

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/owned"
	"valkey.io/operator/internal/status"
)

// foreignRecheck is how often a node blocked by another's object looks again: deleting an
// object without the operator's labels wakes no watch of this controller.
const foreignRecheck = 30 * time.Second

// foreign names the first object of the node's names that the cache does not show and that
// exists, past the cache, without the node as its controller: the caches hold only objects
// with the operator's labels, and applying over someone else's ConfigMap or StatefulSet
// would take it over. "" when the node may create them. An object of the node's that the
// cache does not show yet (it was made a moment ago, and its watch event is still on its
// way) is put in cur as read: it is not applied a second time.
func (r *Reconciler) foreign(ctx context.Context, node *valkeyv1.ValkeyNode, cur *current, want *desired) (string, error) {
	var objs []client.Object
	if cur.cm == nil {
		objs = append(objs, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: node.Namespace, Name: valkeyv1.ConfigMapName(node.Name)}})
	}
	objs = append(objs, workloadObject(node, want.kind))
	for _, obj := range objs {
		foreign, err := owned.Foreign(ctx, r.APIReader, node, obj)
		if err != nil {
			return "", err
		}
		if !foreign {
			cur.seen(obj)
			continue
		}
		return fmt.Sprintf("%s %s exists and is not owned by ValkeyNode %s: it is left as it is and no pod is started; delete or rename it so that the operator can make its own",
			kindOf(obj), obj.GetName(), node.Name), nil
	}
	return "", nil
}

// seen puts in cur an object of the node's read past the cache: one that exists (a UID)
// with the label the cache selects on, so that the cache shows it soon.
func (c *current) seen(obj client.Object) {
	if obj.GetUID() == "" || obj.GetLabels()[valkeyv1.LabelManagedBy] != valkeyv1.ManagedByValue {
		return
	}
	if cm, ok := obj.(*corev1.ConfigMap); ok {
		_, _ = slimConfigMap(cm) // as cached: configMatches reads the digests it adds
		c.cm = cm
		return
	}
	w := readWorkload(obj)
	c.workloads[w.kind] = w
}

// notOwned reports a node blocked by another's object: WorkloadReady=False, ObjectNotOwned,
// with a Warning event when the condition did not say so already.
func (r *Reconciler) notOwned(node *valkeyv1.ValkeyNode, why string) result {
	if old := status.Get(node.Status.Conditions, valkeyv1.ConditionWorkloadReady); old == nil ||
		old.Reason != valkeyv1.ReasonObjectNotOwned || old.Message != why {
		r.Recorder.Eventf(node, nil, corev1.EventTypeWarning, valkeyv1.EventObjectNotOwned, "Create", "%s", why)
	}
	return result{
		ready: status.Condition(valkeyv1.ConditionWorkloadReady, false, valkeyv1.ReasonObjectNotOwned, why),
		roll:  status.Condition(valkeyv1.ConditionRollPending, false, valkeyv1.ReasonUpToDate, "no workload yet"),
		after: foreignRecheck,
	}
}

func kindOf(obj client.Object) string {
	switch obj.(type) {
	case *corev1.ConfigMap:
		return "ConfigMap"
	case *appsv1.Deployment:
		return "Deployment"
	}
	return "StatefulSet"
}
