package volumecontroller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// wantsOtherClass tells whether the node names a StorageClass other than its claim's. A node
// that names none (the cluster default) keeps whatever class its claim has.
func wantsOtherClass(node *valkeyv1.ValkeyNode, claim *corev1.PersistentVolumeClaim) bool {
	want := node.Spec.Persistence.StorageClassName
	return want != nil && ptr.Deref(claim.Spec.StorageClassName, "") != *want
}

// neverBound tells whether a claim has never been bound to a volume: it holds no data. A
// pod that mounts it has not been scheduled (the scheduler binds the claim first), so the
// kubernetes.io/pvc-protection finalizer does not hold its deletion.
func neverBound(claim *corev1.PersistentVolumeClaim) bool {
	return claim.Spec.VolumeName == "" && claim.Status.Phase == corev1.ClaimPending
}

// reclass handles a node whose spec names another class than its claim's: a claim that was
// never bound is deleted (only if it is still the one read, unbound) so that the claim's
// deletion event brings the node back and a claim of the new class is created; a bound
// claim is left alone and reported StorageClassImmutable.
func (r *Reconciler) reclass(ctx context.Context, node *valkeyv1.ValkeyNode, claim *corev1.PersistentVolumeClaim, class classRef) (report, error) {
	from, to := ptr.Deref(claim.Spec.StorageClassName, ""), *node.Spec.Persistence.StorageClassName
	if !neverBound(claim) {
		return r.classImmutable(node, claim, class, from, to), nil
	}
	pre := client.Preconditions{UID: &claim.UID, ResourceVersion: &claim.ResourceVersion}
	if err := r.Delete(ctx, claim, pre); err != nil && !apierrors.IsNotFound(err) {
		return claimReport(node, claim, class, nil), fmt.Errorf("delete unbound claim %s of class %q: %w", claim.Name, from, err)
	}
	r.Recorder.Eventf(node, claim, corev1.EventTypeNormal, valkeyv1.EventClaimReplaced, "ReplaceClaim",
		"claim %s of StorageClass %q was never bound: deleted it to create it with StorageClass %q", claim.Name, from, to)
	msg := fmt.Sprintf("claim %s of StorageClass %q (never bound) is being replaced by one of StorageClass %q", claim.Name, from, to)
	return notUsableReport(node, class, valkeyv1.ReasonCreating, msg), nil
}

// classImmutable reports a class change refused for a bound claim, with a Warning event the
// first time.
func (r *Reconciler) classImmutable(node *valkeyv1.ValkeyNode, claim *corev1.PersistentVolumeClaim, class classRef, from, to string) report {
	msg := fmt.Sprintf("claim %s is bound to PersistentVolume %s of StorageClass %q and keeps it: spec.persistence.storageClassName %q is not applied. "+
		"Set it back to %q; to use another class, create a new cluster on it and move the data there (backup and restore)",
		claim.Name, claim.Spec.VolumeName, from, to, from)
	if cur := status.Get(node.Status.Conditions, valkeyv1.ConditionVolumeReady); cur == nil || cur.Reason != valkeyv1.ReasonStorageClassImmutable {
		r.Recorder.Eventf(node, claim, corev1.EventTypeWarning, valkeyv1.EventStorageClassImmutable, "CheckClaim", "%s", msg)
	}
	rep := claimReport(node, claim, class, nil)
	rep.Ready = status.Condition(valkeyv1.ConditionVolumeReady, false, valkeyv1.ReasonStorageClassImmutable, msg)
	return rep
}
