package workloadcontroller

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// ReasonStatefulSetFailedCreate is the reason of the Warning event the StatefulSet
// controller records on a StatefulSet whose pod it cannot create.
const ReasonStatefulSetFailedCreate = "FailedCreate"

// maxFailureMessage bounds the workload's own message copied into WorkloadReady and events.
const maxFailureMessage = 512

// failedCreateEvents is the field selector of the Event cache: only the StatefulSet
// controller's FailedCreate Warnings, so that the cache stays small.
const failedCreateEvents = "involvedObject.kind=StatefulSet,reason=" + ReasonStatefulSetFailedCreate

// createFailure is why the node's workload cannot create its pod, "" when nothing says so:
// the newest FailedCreate event of the StatefulSet (by UID: an event of an earlier
// StatefulSet of the same name does not count), or the Deployment's ReplicaFailure condition.
func (r *Reconciler) createFailure(ctx context.Context, node *valkeyv1.ValkeyNode, cur *current) (string, error) {
	w := cur.workload()
	if w == nil {
		return "", nil
	}
	if w.kind == valkeyv1.WorkloadDeployment {
		return w.failure, nil
	}
	events := &corev1.EventList{}
	if err := r.List(ctx, events, client.InNamespace(node.Namespace)); err != nil {
		return "", fmt.Errorf("list FailedCreate events of StatefulSet %s: %w", w.name, err)
	}
	return newestFailure(events.Items, w.uid), nil
}

// newestFailure is the message of the newest FailedCreate event about the object uid.
func newestFailure(events []corev1.Event, uid types.UID) string {
	var msg string
	var newest time.Time
	for i := range events {
		e := &events[i]
		if e.InvolvedObject.UID != uid || e.Reason != ReasonStatefulSetFailedCreate {
			continue
		}
		if t := eventTime(e); msg == "" || t.After(newest) {
			msg, newest = e.Message, t
		}
	}
	return truncate(msg, maxFailureMessage)
}

// eventTime is when an event was last seen, whichever API recorded it.
func eventTime(e *corev1.Event) time.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// deploymentFailure is a Deployment's ReplicaFailure condition (its ReplicaSet cannot
// create the pod), "" when it has none.
func deploymentFailure(d *appsv1.Deployment) string {
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue {
			return truncate(fmt.Sprintf("%s: %s", c.Reason, c.Message), maxFailureMessage)
		}
	}
	return ""
}

// eventToNode maps a StatefulSet's FailedCreate event to the ValkeyNode whose workload it
// names (valkey-<node>).
func eventToNode(_ context.Context, o client.Object) []reconcile.Request {
	e, ok := o.(*corev1.Event)
	if !ok || e.InvolvedObject.Kind != "StatefulSet" {
		return nil
	}
	node, found := strings.CutPrefix(e.InvolvedObject.Name, valkeyv1.WorkloadName(""))
	if !found || node == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: e.InvolvedObject.Namespace, Name: node}}}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
