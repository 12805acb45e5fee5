package workloadcontroller

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/owned"
	"valkey.io/operator/internal/status"
)

const (
	// replaceWait bounds how long the reconcile that deletes a StatefulSet to replace it
	// waits for the garbage collector to let the orphaning delete finish (it takes the
	// finalizer off within a second as a rule), to make it again at once.
	replaceWait = 2 * time.Second
	// replaceRecheck is how often a node whose workload is still being deleted looks again.
	replaceRecheck = 5 * time.Second
)

// mustReplace: the node's StatefulSet was made by an earlier release without the cluster's
// headless Service as its serviceName, an immutable field, so its pod has no DNS name. It is
// replaced when no roll is in flight, before any roll a new release brings, so that the pod
// that roll starts has its DNS name.
func mustReplace(node *valkeyv1.ValkeyNode, w *workload, want *desired) bool {
	sub := node.PodSubdomain()
	return w.kind == valkeyv1.WorkloadStatefulSet && want.kind == valkeyv1.WorkloadStatefulSet &&
		sub != "" && w.serviceName != sub && w.rollFrom == ""
}

// replace makes the node's StatefulSet again with its serviceName without restarting its
// pod: it reads the StatefulSet past the cache (the cache keeps no template) and remembers
// it, deletes it with its pod orphaned (the garbage collector takes the StatefulSet's
// ownership off the pod and revisions, then the StatefulSet goes), waits a little for it to
// be gone (else the reconcile after its delete event does the rest, see create), and
// creates the same StatefulSet with the serviceName (remake), which adopts the
// pod as it runs: same labels, same template, same revision. A roll the new release brings
// is then requested as usual. While it is being deleted nothing is applied to it; the pod
// runs on and its PodDisruptionBudget still covers it.
func (r *Reconciler) replace(ctx context.Context, node *valkeyv1.ValkeyNode, cur *current, w *workload, want *desired) (result, error) {
	while := fmt.Sprintf("%s %s is being made again with serviceName %s (an earlier release made it without), its pod kept",
		w.kind, w.name, node.PodSubdomain())
	res := result{ready: podReadiness(cur.pod, w.hash), after: replaceRecheck,
		roll: status.Condition(valkeyv1.ConditionRollPending, false, valkeyv1.ReasonReplacing, while)}
	if w.hash != want.hash {
		// The roll is requested meanwhile, so that the topology controller sees every node
		// that waits for one and orders them (replicas first); an approval given meanwhile
		// is applied once the StatefulSet is made again.
		res.roll = r.requestRoll(node, w, want, "; meanwhile "+while)
	}
	if w.deleting {
		return res, nil // its delete event brings the next reconcile, which makes it again (create)
	}
	key := types.NamespacedName{Namespace: node.Namespace, Name: node.Name}
	obj := workloadObject(node, w.kind)
	if deleted, err := r.orphanDelete(ctx, node, key, w); !deleted || err != nil {
		return res, err
	}
	gone := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, replaceWait, true, func(ctx context.Context) (bool, error) {
		err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(obj), &appsv1.StatefulSet{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	}) == nil
	if !gone {
		return res, nil
	}
	delete(cur.workloads, w.kind)
	if old, ok := r.replacing.take(key); ok {
		return res, r.remake(ctx, node, cur, old)
	}
	return res, nil
}

// orphanDelete reads the node's StatefulSet past the cache, remembers it for remake, and
// deletes it with its pod orphaned, on the condition that it is still the one read. It
// tells whether it deleted it; what it remembered is dropped when it did not.
func (r *Reconciler) orphanDelete(ctx context.Context, node *valkeyv1.ValkeyNode, key types.NamespacedName, w *workload) (bool, error) {
	old := &appsv1.StatefulSet{}
	obj := workloadObject(node, w.kind)
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(obj), old); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	r.replacing.put(key, old)
	err := r.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationOrphan), client.Preconditions{UID: &old.UID})
	if err != nil {
		r.replacing.take(key)
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return false, nil // gone or made again meanwhile: the next reconcile sees which
		}
		return false, fmt.Errorf("delete %s %s to give it serviceName %s: %w", w.kind, w.name, node.PodSubdomain(), err)
	}
	r.Recorder.Eventf(node, nil, corev1.EventTypeNormal, valkeyv1.EventWorkloadReplaced, "Replace",
		"%s %s was made without serviceName %s (an earlier release): deleted with its pod orphaned and made again with it; the pod runs on and gets its DNS name at its next restart",
		w.kind, w.name, node.PodSubdomain())
	return true, nil
}

// remake creates the StatefulSet old again, with the node's serviceName: the same labels,
// annotations (its template hash), owner and spec, so that it adopts the running pod
// without restarting it.
func (r *Reconciler) remake(ctx context.Context, node *valkeyv1.ValkeyNode, cur *current, old *appsv1.StatefulSet) error {
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: old.Namespace, Name: old.Name,
			Labels: old.Labels, Annotations: old.Annotations, OwnerReferences: old.OwnerReferences,
		},
		Spec: *old.Spec.DeepCopy(),
	}
	sts.Spec.ServiceName = node.PodSubdomain()
	if err := r.Create(ctx, sts, client.FieldOwner(valkeyv1.FieldManagerWorkload)); err != nil {
		return fmt.Errorf("create StatefulSet %s again with serviceName %s: %w", sts.Name, sts.Spec.ServiceName, err)
	}
	cur.workloads[valkeyv1.WorkloadStatefulSet] = readWorkload(sts)
	// What the create wrote is owned by update; owned by the controller's apply at once, the
	// next apply (a roll) removes what the earlier release's template had and this one has
	// not in the same write, so the pod restarts once, not twice. Should this fail, the next
	// apply moves it (owned.ApplyConfiguration).
	if _, err := owned.TakeOverUpdates(ctx, r.Client, sts, valkeyv1.FieldManagerWorkload); err != nil {
		log.FromContext(ctx).Info("the remade StatefulSet's fields stay owned by update until the next apply", "error", err.Error())
	}
	return nil
}
