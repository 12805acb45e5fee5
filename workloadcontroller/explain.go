package workloadcontroller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// explain replaces WorkloadReady=False with what Kubernetes says keeps the pod away: its
// Kubernetes node is lost (NodeNotReady), or the workload cannot create it (FailedCreate).
// Either is also recorded as a Warning event on the node when it first appears or changes.
func (r *Reconciler) explain(ctx context.Context, node *valkeyv1.ValkeyNode, cur *current, ready metav1.Condition) (metav1.Condition, error) {
	w := cur.workload()
	if w == nil {
		return ready, nil
	}
	lost, err := r.nodeLoss(ctx, node, cur.pod)
	if err != nil {
		return ready, err
	}
	if lost != "" {
		return r.warnOnChange(node, valkeyv1.ReasonNodeNotReady, valkeyv1.EventNodeNotReady, lost), nil
	}
	if cur.pod != nil || ready.Reason != valkeyv1.ReasonCreating {
		return ready, nil
	}
	why, err := r.createFailure(ctx, node, cur)
	if err != nil || why == "" {
		return ready, err
	}
	return r.warnOnChange(node, valkeyv1.ReasonFailedCreate, valkeyv1.EventFailedCreate,
		fmt.Sprintf("%s %s cannot create its pod: %s", w.kind, w.name, why)), nil
}

// warnOnChange is WorkloadReady=False with the reason and message, and a Warning event
// unless the node already reports exactly that.
func (r *Reconciler) warnOnChange(node *valkeyv1.ValkeyNode, reason, event, msg string) metav1.Condition {
	if old := status.Get(node.Status.Conditions, valkeyv1.ConditionWorkloadReady); old == nil || old.Reason != reason || old.Message != msg {
		r.Recorder.Eventf(node, nil, corev1.EventTypeWarning, event, "Observe", "%s", msg)
	}
	return status.Condition(valkeyv1.ConditionWorkloadReady, false, reason, msg)
}
