package volumecontroller

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// reconcileDelete holds the pvc-protection finalizer until the topology controller reports
// Drained=True for the node's current generation (or the skip-drain annotation is set),
// then applies the reclaim policy and removes the finalizer. gone is true once the
// finalizer is removed (or was never held): the node is then left alone.
func (r *Reconciler) reconcileDelete(ctx context.Context, node *valkeyv1.ValkeyNode) (rep report, gone bool, err error) {
	if !controllerutil.ContainsFinalizer(node, valkeyv1.PVCProtectionFinalizer) {
		return report{}, true, nil
	}
	if node.Spec.Persistence == nil {
		return report{}, true, r.removeFinalizer(ctx, node)
	}

	claim, err := r.getClaim(ctx, node)
	if err != nil {
		return notUsableReport(node, classRef{}, valkeyv1.ReasonPending, err.Error()), false, err
	}
	var class classRef
	if claim != nil {
		if class, err = resolveClass(ctx, r.Client, claim.Spec.StorageClassName); err != nil {
			return claimReport(node, claim, class, nil), false, err
		}
	}
	ours := claim != nil && claimOwnership(node, claim) == owned
	rep = r.deletingReport(node, claim, class, ours)

	policy := node.Spec.Persistence.EffectiveReclaimPolicy()
	_, skip := node.Annotations[valkeyv1.AnnotationSkipDrain]
	drained := status.IsCurrentTrue(node, node.Status.Conditions, valkeyv1.ConditionDrained)
	if !drained && !skip {
		rep.Ready.Message += fmt.Sprintf("; the node is being deleted: reclaimPolicy %s is applied once Drained is True", policy)
		return rep, false, nil
	}
	if !drained {
		r.Recorder.Eventf(node, related(claim), corev1.EventTypeWarning, valkeyv1.EventDrainSkipped, "ApplyReclaimPolicy",
			"%s is set: applying reclaimPolicy %s without waiting for Drained=True; slots this node still owns become unavailable",
			valkeyv1.AnnotationSkipDrain, policy)
	}

	if claim == nil {
		// The cache may not have seen a claim created moments ago: ask the API server
		// before letting the node go without applying the policy to it.
		if claim, err = r.liveClaim(ctx, node); err != nil {
			return rep, false, err
		}
		ours = claim != nil && claimOwnership(node, claim) == owned
	}
	switch policy {
	case valkeyv1.ReclaimDelete:
		waiting, err := r.deleteClaim(ctx, node, claim, ours)
		if err != nil || waiting {
			if claim != nil && ours {
				rep.Ready = status.Condition(valkeyv1.ConditionVolumeReady, false, valkeyv1.ReasonClaimTerminating, fmt.Sprintf(
					"the node is being deleted with reclaimPolicy Delete: waiting for claim %s to be gone (it stays while a pod uses it)", claim.Name))
			}
			return rep, false, err
		}
	default:
		if ours {
			if err := r.releaseClaim(ctx, node, claim); err != nil {
				return rep, false, err
			}
		}
	}
	return rep, true, r.removeFinalizer(ctx, node)
}

// deletingReport is the status of a node being deleted, before its reclaim policy applies.
func (r *Reconciler) deletingReport(node *valkeyv1.ValkeyNode, claim *corev1.PersistentVolumeClaim, class classRef, ours bool) report {
	switch {
	case claim == nil:
		return notUsableReport(node, class, valkeyv1.ReasonPending, fmt.Sprintf("claim %s does not exist", valkeyv1.ClaimName(node.Name)))
	case !ours:
		return notUsableReport(node, class, valkeyv1.ReasonClaimConflict, fmt.Sprintf(
			"claim %s belongs to %s, not to this node; it is left alone", claim.Name, claim.Annotations[valkeyv1.AnnotationClaimIdentity]))
	}
	return claimReport(node, claim, class, nil)
}

// liveClaim reads the node's claim from the API server; nil when there is none.
func (r *Reconciler) liveClaim(ctx context.Context, node *valkeyv1.ValkeyNode) (*corev1.PersistentVolumeClaim, error) {
	claim := &corev1.PersistentVolumeClaim{}
	key := client.ObjectKey{Namespace: node.Namespace, Name: valkeyv1.ClaimName(node.Name)}
	if err := r.APIReader.Get(ctx, key, claim); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("get claim %s: %w", key.Name, err)
	}
	return claim, nil
}

// deleteClaim deletes the node's own claim under reclaimPolicy Delete. waiting is true
// until the claim is gone.
func (r *Reconciler) deleteClaim(ctx context.Context, node *valkeyv1.ValkeyNode, claim *corev1.PersistentVolumeClaim, ours bool) (waiting bool, err error) {
	if claim == nil || !ours {
		return false, nil
	}
	if claim.DeletionTimestamp != nil {
		return true, nil
	}
	uid := claim.UID
	if err := r.Delete(ctx, claim, client.Preconditions{UID: &uid}); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return true, fmt.Errorf("delete claim %s: %w", claim.Name, err)
	}
	r.Recorder.Eventf(node, claim, corev1.EventTypeNormal, valkeyv1.EventClaimDeleted, "DeleteClaim",
		"deleted claim %s (reclaimPolicy Delete); the node goes once the claim is gone", claim.Name)
	return true, nil
}

// releaseClaim marks the node's claim as released under reclaimPolicy Retain. It keeps its
// labels and identity, so it can be found, and a later node of the same name adopts it.
func (r *Reconciler) releaseClaim(ctx context.Context, node *valkeyv1.ValkeyNode, claim *corev1.PersistentVolumeClaim) error {
	if _, done := claim.Annotations[valkeyv1.AnnotationClaimReleased]; done {
		return nil
	}
	base := claim.DeepCopy()
	if claim.Annotations == nil {
		claim.Annotations = map[string]string{}
	}
	claim.Annotations[valkeyv1.AnnotationClaimReleased] = time.Now().UTC().Format(time.RFC3339)
	if err := r.Patch(ctx, claim, client.MergeFrom(base)); err != nil {
		return fmt.Errorf("release claim %s: %w", claim.Name, err)
	}
	r.Recorder.Eventf(node, claim, corev1.EventTypeNormal, valkeyv1.EventClaimReleased, "RetainClaim",
		"released claim %s (reclaimPolicy Retain): it keeps its data and labels, and a node of the same name reuses it", claim.Name)
	return nil
}

// related is the claim as an event's related object (none when the claim is absent: a
// typed nil would not be nil for the recorder).
func related(claim *corev1.PersistentVolumeClaim) runtime.Object {
	if claim == nil {
		return nil
	}
	return claim
}

// removeFinalizer lets the node go.
func (r *Reconciler) removeFinalizer(ctx context.Context, node *valkeyv1.ValkeyNode) error {
	base := node.DeepCopy()
	controllerutil.RemoveFinalizer(node, valkeyv1.PVCProtectionFinalizer)
	if err := r.Patch(ctx, node, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("remove finalizer %s: %w", valkeyv1.PVCProtectionFinalizer, err))
	}
	return nil
}
