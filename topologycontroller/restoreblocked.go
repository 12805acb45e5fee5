package topologycontroller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
	"valkey.io/operator/topologycontroller/backup"
)

// reportRestoreBlocked reports a restore that cannot start: Restored=False, Ready=False and
// Progressing=True with its reason (the other conditions stay as observed), and a Warning
// event when it is new. No node is created; a change of the backup wakes the cluster.
func (r *Reconciler) reportRestoreBlocked(ctx context.Context, vc *valkeyv1.ValkeyCluster, b *backup.Blocked) (ctrl.Result, error) {
	if cur := status.Get(vc.Status.Conditions, valkeyv1.ConditionRestored); cur == nil || cur.Reason != b.Reason || cur.Message != b.Msg {
		r.Recorder.Eventf(vc, nil, corev1.EventTypeWarning, b.Reason, "Restore", "%s", b.Msg)
	}
	st := *vc.Status.DeepCopy()
	st.Conditions = []metav1.Condition{
		status.Condition(valkeyv1.ConditionRestored, false, b.Reason, b.Msg),
		status.Condition(valkeyv1.ConditionReady, false, b.Reason, b.Msg),
		status.Condition(valkeyv1.ConditionProgressing, true, b.Reason, b.Msg),
	}
	for _, t := range append([]string{valkeyv1.ConditionDegraded, valkeyv1.ConditionSlotsAssigned}, valkeyv1.AccessConditions...) {
		if c := status.Get(vc.Status.Conditions, t); c != nil {
			kept := *c
			kept.ObservedGeneration = 0
			st.Conditions = append(st.Conditions, kept)
		}
	}
	return ctrl.Result{}, r.Status.ApplyCluster(ctx, vc, st)
}
