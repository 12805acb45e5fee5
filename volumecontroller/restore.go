package volumecontroller

import (
	"context"
	"fmt"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// restoreSnapshot is the VolumeSnapshot a node's claim is to be created from, "" for an
// empty claim.
func restoreSnapshot(node *valkeyv1.ValkeyNode) string {
	if node.Spec.Restore == nil {
		return ""
	}
	return node.Spec.Restore.SnapshotName
}

// restoreSource returns the VolumeSnapshot a restored node's claim is created from, once
// it exists and is ready to use. Until then it returns why the claim waits (the
// RestoreSourceNotReady message) and records a Warning event when the snapshot is missing
// or failed, or the VolumeSnapshot API is not installed.
func (r *Reconciler) restoreSource(ctx context.Context, node *valkeyv1.ValkeyNode, name string) (*snapshotv1.VolumeSnapshot, string, error) {
	claim := valkeyv1.ClaimName(node.Name)
	var vs *snapshotv1.VolumeSnapshot
	if r.Snapshots != nil {
		var err error
		if vs, err = r.getRestoreSnapshot(ctx, node.Namespace, name); err != nil {
			return nil, fmt.Sprintf("claim %s is not created: %v", claim, err), err
		}
	}
	var msg string
	warn := true
	switch {
	case r.Snapshots == nil:
		msg = fmt.Sprintf("claim %s is not created: it restores VolumeSnapshot %s, but %s", claim, name, snapshotAPIMissing)
	case vs == nil:
		msg = fmt.Sprintf("claim %s is not created until VolumeSnapshot %s, which it restores, exists in namespace %s", claim, name, node.Namespace)
	case vs.Status != nil && ptr.Deref(vs.Status.ReadyToUse, false):
		return vs, "", nil
	case vs.Status != nil && vs.Status.Error != nil:
		msg = fmt.Sprintf("claim %s is not created: VolumeSnapshot %s, which it restores, failed: %s", claim, name, ptr.Deref(vs.Status.Error.Message, "no message"))
	default:
		warn = false
		msg = fmt.Sprintf("claim %s is not created until VolumeSnapshot %s, which it restores, is ready to use (waiting for the snapshot-controller and the CSI driver)", claim, name)
	}
	if cur := status.Get(node.Status.Conditions, valkeyv1.ConditionVolumeReady); warn && (cur == nil || cur.Message != msg) {
		r.Recorder.Eventf(node, nil, corev1.EventTypeWarning, valkeyv1.ReasonRestoreSourceNotReady, "RestoreClaim", "%s", msg)
	}
	return nil, msg, nil
}

// getRestoreSnapshot reads a VolumeSnapshot from the cache, and past it when the cache has
// none (one without the operator's labels); nil when it does not exist.
func (r *Reconciler) getRestoreSnapshot(ctx context.Context, namespace, name string) (*snapshotv1.VolumeSnapshot, error) {
	key := client.ObjectKey{Namespace: namespace, Name: name}
	vs := &snapshotv1.VolumeSnapshot{}
	err := r.Snapshots.Get(ctx, key, vs)
	if apierrors.IsNotFound(err) {
		err = r.APIReader.Get(ctx, key, vs)
	}
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("get VolumeSnapshot %s: %w", name, err)
	}
	return vs, nil
}

// restoreFrom makes a claim start from a VolumeSnapshot: dataSource and dataSourceRef name
// it, and the claim requests at least the snapshot's restore size (a provisioner refuses a
// claim smaller than its source).
func restoreFrom(claim *corev1.PersistentVolumeClaim, vs *snapshotv1.VolumeSnapshot) {
	group := snapshotGroupVersion.Group
	claim.Spec.DataSource = &corev1.TypedLocalObjectReference{APIGroup: &group, Kind: "VolumeSnapshot", Name: vs.Name}
	claim.Spec.DataSourceRef = &corev1.TypedObjectReference{APIGroup: &group, Kind: "VolumeSnapshot", Name: vs.Name}
	if size := vs.Status.RestoreSize; size != nil {
		if req := claim.Spec.Resources.Requests[corev1.ResourceStorage]; size.Cmp(req) > 0 {
			claim.Spec.Resources.Requests[corev1.ResourceStorage] = size.DeepCopy()
		}
	}
}

// snapshotOf is the VolumeSnapshot a claim was created from ("" when none).
func snapshotOf(claim *corev1.PersistentVolumeClaim) string {
	ds := claim.Spec.DataSource
	if ds == nil || ds.Kind != "VolumeSnapshot" || ptr.Deref(ds.APIGroup, "") != snapshotGroupVersion.Group {
		return ""
	}
	return ds.Name
}

// madeForRestore tells whether claim is the one created for node's restore: it carries the
// node's identity and was created from snap. A claim an earlier node of the same name
// retained is not, even one made from the same snapshot: its data went on after that
// restore.
func madeForRestore(node *valkeyv1.ValkeyNode, claim *corev1.PersistentVolumeClaim, snap string) bool {
	return claimOwnership(node, claim) == owned && snapshotOf(claim) == snap
}

// restoredFrom is status.volume.restoredFrom of a restored node's claim: the snapshot the
// claim was created from when the node restores (spec.restore) and the claim was made for
// it ("" otherwise). While the node restores a snapshot, only the claim made for it from that
// snapshot is reported at all (reconcileNormal), so the topology controller reads this as
// the evidence that the node's data starts from the backup.
func restoredFrom(node *valkeyv1.ValkeyNode, claim *corev1.PersistentVolumeClaim) string {
	if node.Spec.Restore == nil || claimOwnership(node, claim) != owned {
		return ""
	}
	return snapshotOf(claim)
}

// restoreClaimExists reports a claim under a restored node's claim name that was not made
// for this node from its snapshot. Its data is not the backup's, and it may be the only copy
// of other data: it is neither adopted, changed nor deleted, and the node gets no claim (so
// no pod) until the user deletes it or restores under another name.
func (r *Reconciler) restoreClaimExists(node *valkeyv1.ValkeyNode, claim *corev1.PersistentVolumeClaim, class classRef, snap string) report {
	msg := fmt.Sprintf("claim %s exists (%s) but was not created for this node from VolumeSnapshot %s, which it restores (backup %s): "+
		"its data is not the backup's, so it is neither adopted nor deleted and the node does not start; "+
		"delete the claim to restore (its data is lost), or, to keep that data, delete this ValkeyCluster and restore under another name",
		claim.Name, describeClaim(claim), snap, node.Spec.Restore.Backup)
	if claim.DeletionTimestamp != nil {
		msg = fmt.Sprintf("claim %s (%s) is being deleted; this node's claim is created from VolumeSnapshot %s once it is gone (it stays while a pod uses it)",
			claim.Name, describeClaim(claim), snap)
	}
	if cur := status.Get(node.Status.Conditions, valkeyv1.ConditionVolumeReady); cur == nil || cur.Reason != valkeyv1.ReasonRestoreClaimExists {
		r.Recorder.Eventf(node, claim, corev1.EventTypeWarning, valkeyv1.ReasonRestoreClaimExists, "RestoreClaim", "%s", msg)
	}
	return notUsableReport(node, class, valkeyv1.ReasonRestoreClaimExists, msg)
}

// describeClaim says whose a claim is and what it was made from, for a message.
func describeClaim(claim *corev1.PersistentVolumeClaim) string {
	whose := "not made by the operator"
	if id := claim.Annotations[valkeyv1.AnnotationClaimIdentity]; id != "" {
		whose = "made for " + id
		if at, released := claim.Annotations[valkeyv1.AnnotationClaimReleased]; released {
			whose = fmt.Sprintf("retained by %s, released at %s", id, at)
		}
	}
	from := "created empty"
	if snap := snapshotOf(claim); snap != "" {
		from = "created from VolumeSnapshot " + snap
	}
	return whose + ", " + from
}
