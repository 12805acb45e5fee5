package volumecontroller

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// report is everything the volume controller owns on a ValkeyNode's status.
type report struct {
	Ready metav1.Condition
	Sized metav1.Condition
	// Healthy is VolumeHealthy (see reportUsage).
	Healthy metav1.Condition
	Volume  *valkeyv1.VolumeStatus
	// Snapshot is reported while the node's point is saved for a backup.
	Snapshot *snapshotReport
	// RetryAfter, when set, is how soon the node is looked at again with nothing changed:
	// an expansion the API server refused may be admitted later (see RetryRefusedExpansion).
	RetryAfter time.Duration
}

// ephemeralReport is the status of a node without persistence.
func ephemeralReport() report {
	msg := "no persistence requested: the node's data lives in an emptyDir"
	return report{
		Ready: status.Condition(valkeyv1.ConditionVolumeReady, true, valkeyv1.ReasonEphemeral, msg),
		Sized: status.Condition(valkeyv1.ConditionVolumeSized, true, valkeyv1.ReasonEphemeral, msg),
	}
}

// notUsableReport is the status while the node has no claim it can use (not created yet,
// waiting for its StorageClass, or a claim of another identity): VolumeSized says the
// same as VolumeReady.
func notUsableReport(node *valkeyv1.ValkeyNode, class classRef, reason, message string) report {
	return report{
		Ready:  status.Condition(valkeyv1.ConditionVolumeReady, false, reason, message),
		Sized:  status.Condition(valkeyv1.ConditionVolumeSized, false, reason, message),
		Volume: volumeStatus(node, nil, class),
	}
}

// readyVerdict maps a claim that belongs to the node to VolumeReady.
func readyVerdict(claim *corev1.PersistentVolumeClaim, class classRef) (bool, string, string) {
	switch {
	case claim.DeletionTimestamp != nil:
		return false, valkeyv1.ReasonClaimTerminating, fmt.Sprintf(
			"claim %s is being deleted; it stays while a pod uses it, and a new, empty claim is created once it is gone", claim.Name)
	case claim.Status.Phase == corev1.ClaimLost:
		return false, valkeyv1.ReasonClaimLost, fmt.Sprintf(
			"claim %s lost its PersistentVolume %s: the data is gone or unreachable; delete the claim to get a new, empty one", claim.Name, claim.Spec.VolumeName)
	case claim.Status.Phase == corev1.ClaimBound:
		return true, valkeyv1.ReasonBound, fmt.Sprintf("claim %s is bound to PersistentVolume %s", claim.Name, claim.Spec.VolumeName)
	case class.missing():
		if class.Name == "" {
			return false, valkeyv1.ReasonStorageClassNotFound, fmt.Sprintf(
				"claim %s names no StorageClass and the cluster has no default StorageClass", claim.Name)
		}
		return false, valkeyv1.ReasonStorageClassNotFound, fmt.Sprintf(
			"claim %s waits for StorageClass %s, which does not exist", claim.Name, class.Name)
	case bindsOnFirstConsumer(class.Class):
		return true, valkeyv1.ReasonWaitingForFirstConsumer, fmt.Sprintf(
			"claim %s is pending until a pod uses it (StorageClass %s binds on first consumer)", claim.Name, class.Name)
	}
	return false, valkeyv1.ReasonPending, fmt.Sprintf("claim %s waits for a PersistentVolume (%s)", claim.Name, class.describe())
}

// claimReport is the status of a node whose claim exists and belongs to it.
func claimReport(node *valkeyv1.ValkeyNode, claim *corev1.PersistentVolumeClaim, class classRef, blocked *sized) report {
	ok, reason, msg := readyVerdict(claim, class)
	rep := report{
		Ready:  status.Condition(valkeyv1.ConditionVolumeReady, ok, reason, msg),
		Volume: volumeStatus(node, claim, class),
	}
	if claim.DeletionTimestamp != nil || claim.Status.Phase == corev1.ClaimLost {
		rep.Sized = status.Condition(valkeyv1.ConditionVolumeSized, false, reason, msg)
		return rep
	}
	desired, grown := desiredSize(node, claim)
	v := sizeVerdict(desired, claim, blocked)
	if grown && v.Reason == valkeyv1.ReasonSized {
		v.Reason, v.Message = valkeyv1.ReasonAutoGrown, fmt.Sprintf("%s: grown by persistence.autoGrow past persistence.size %s", v.Message, node.Spec.Persistence.Size.String())
	}
	rep.Sized = status.Condition(valkeyv1.ConditionVolumeSized, v.OK, v.Reason, v.Message)
	return rep
}

// volumeStatus is status.volume for a node and its claim (nil when it has none yet).
func volumeStatus(node *valkeyv1.ValkeyNode, claim *corev1.PersistentVolumeClaim, class classRef) *valkeyv1.VolumeStatus {
	vs := &valkeyv1.VolumeStatus{
		ClaimName:        valkeyv1.ClaimName(node.Name),
		StorageClassName: class.Name,
		Requested:        node.Spec.Persistence.Size.String(),
	}
	if claim == nil {
		return vs
	}
	if req, ok := storage(claim.Spec.Resources.Requests); ok {
		vs.Requested = req.String()
	}
	if capacity, ok := storage(claim.Status.Capacity); ok {
		vs.Capacity = capacity.String()
	}
	vs.Phase = string(claim.Status.Phase)
	vs.AutoGrownTo = grownTo(node, claim)
	vs.RestoredFrom = restoredFrom(node, claim)
	return vs
}

// usageReportOf is what the node's published figure gives its status, read once per
// reconcile (autoGrow acts on its figure).
func (r *Reconciler) usageReportOf(node *valkeyv1.ValkeyNode) usageReport {
	if node.Spec.Persistence == nil {
		return usageReport{Healthy: ephemeralHealth()}
	}
	return usageOf(node, r.usage.get(client.ObjectKeyFromObject(node)))
}

// reportUsage adds VolumeHealthy and status.volume.usage to the report, with an event when
// VolumeHealthy turns False or back to True.
func (r *Reconciler) reportUsage(node *valkeyv1.ValkeyNode, u usageReport, rep *report) {
	rep.Healthy = u.Healthy
	if rep.Volume != nil && u.Usage != nil {
		v := *rep.Volume
		v.Usage = u.Usage
		rep.Volume = &v
	}
	cur := status.Get(node.Status.Conditions, valkeyv1.ConditionVolumeHealthy)
	switch {
	case u.Healthy.Status == metav1.ConditionFalse && (cur == nil || cur.Status != metav1.ConditionFalse || cur.Reason != u.Healthy.Reason):
		r.Recorder.Eventf(node, nil, corev1.EventTypeWarning, valkeyv1.EventVolumeUnhealthy, "MeasureVolume", "%s", u.Healthy.Message)
	case u.Healthy.Status == metav1.ConditionTrue && cur != nil && cur.Status == metav1.ConditionFalse:
		r.Recorder.Eventf(node, nil, corev1.EventTypeNormal, valkeyv1.EventVolumeHealthy, "MeasureVolume", "%s", u.Healthy.Message)
	}
}

// applyStatus writes the report as the volume controller's status of the node.
func (r *Reconciler) applyStatus(ctx context.Context, node *valkeyv1.ValkeyNode, rep report) error {
	share := status.VolumeShare{Conditions: []metav1.Condition{rep.Ready, rep.Sized, rep.Healthy}, Volume: rep.Volume}
	if rep.Snapshot != nil {
		share.Conditions = append(share.Conditions, rep.Snapshot.Cond)
		if share.Volume == nil {
			share.Volume = &valkeyv1.VolumeStatus{}
		} else {
			v := *share.Volume
			share.Volume = &v
		}
		share.Volume.Snapshot = rep.Snapshot.Status
	}
	return r.Status.ApplyNode(ctx, node, share)
}
