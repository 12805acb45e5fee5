package topologycontroller

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
	"valkey.io/operator/topologycontroller/access"
	"valkey.io/operator/topologycontroller/servertls"
)

// passwordRecheck is how often an unusable password Secret is looked at again.
const passwordRecheck = 10 * time.Second

// reportPassword reports an unusable password Secret: Ready=False with its reason, and a
// Warning event when it is new (see reportUnusable).
func (r *Reconciler) reportPassword(ctx context.Context, vc *valkeyv1.ValkeyCluster, pe *access.PasswordError) (ctrl.Result, error) {
	return r.reportUnusable(ctx, vc, valkeyv1.ConditionReady, "ReadPassword", pe.Reason, pe.Msg)
}

// reportUnusable reports a Secret the cluster cannot use: the condition cond False with
// reason and msg (the other conditions and the counters stay as last observed), and a
// Warning event when it is new. Nothing else is done this round. The Secret is looked at
// again after passwordRecheck: a user's Secret is not watched.
func (r *Reconciler) reportUnusable(ctx context.Context, vc *valkeyv1.ValkeyCluster, cond, action, reason, msg string) (ctrl.Result, error) {
	if cur := status.Get(vc.Status.Conditions, cond); cur == nil || cur.Reason != reason || cur.Message != msg {
		r.Recorder.Eventf(vc, nil, corev1.EventTypeWarning, reason, action, "%s", msg)
	}
	st := *vc.Status.DeepCopy()
	st.Conditions = []metav1.Condition{status.Condition(cond, false, reason, msg)}
	for _, t := range append(append([]string{valkeyv1.ConditionRestored}, valkeyv1.ClusterConditions...), valkeyv1.AccessConditions...) {
		if c := status.Get(vc.Status.Conditions, t); c != nil && t != cond {
			kept := *c
			kept.ObservedGeneration = 0 // written for the current generation, as before
			st.Conditions = append(st.Conditions, kept)
		}
	}
	if err := r.Status.ApplyCluster(ctx, vc, st); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: passwordRecheck}, nil
}

// recheckUsers looks again within passwordRecheck while UsersApplied is False (user Secrets
// are not watched), without reporting the cluster as Progressing: nothing else waits for
// the users. It runs after the phases, which ask for sooner when they acted.
func (st *clusterState) recheckUsers() {
	if c := st.usersApplied; c != nil && c.Status == metav1.ConditionFalse && (st.Requeue == 0 || passwordRecheck < st.Requeue) {
		st.Requeue = passwordRecheck
	}
}

// reportTLS reports an unusable certificate Secret: TLSReady=False with its reason, and a
// Warning event when it is new (see reportUnusable). Nothing else is done this round:
// nothing running changes.
func (r *Reconciler) reportTLS(ctx context.Context, vc *valkeyv1.ValkeyCluster, te *servertls.Error) (ctrl.Result, error) {
	return r.reportUnusable(ctx, vc, valkeyv1.ConditionTLSReady, "ReadCertificate", te.Reason, te.Msg)
}
