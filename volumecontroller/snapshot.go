package volumecontroller

import (
	"context"
	"fmt"
	"time"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// backupKind is the kind of a snapshot's owner.
const backupKind = "ValkeyBackup"

// snapshotReport is SnapshotReady and status.volume.snapshot, reported while the node's
// status.topology.savedPoint is set.
type snapshotReport struct {
	Cond   metav1.Condition
	Status *valkeyv1.SnapshotStatus
}

// savedPoint is the node's saved point for a backup, nil when none is set.
func savedPoint(node *valkeyv1.ValkeyNode) *valkeyv1.SavedPoint {
	if node.Status.Topology == nil {
		return nil
	}
	return node.Status.Topology.SavedPoint
}

// reconcileSnapshot snapshots the claim of a node whose point is saved for a backup, once,
// and reports the snapshot; nil when no point is saved. The VolumeSnapshot is never
// changed or deleted here: its backup owns it, and the garbage collector deletes it with
// the backup.
func (r *Reconciler) reconcileSnapshot(ctx context.Context, node *valkeyv1.ValkeyNode) (*snapshotReport, error) {
	sp := savedPoint(node)
	if sp == nil {
		return nil, nil
	}
	name := valkeyv1.SnapshotName(sp.Backup, node.Spec.Shard)
	rep := &snapshotReport{Status: &valkeyv1.SnapshotStatus{Name: name, Backup: sp.Backup}}
	switch {
	case r.Snapshots == nil:
		return r.snapshotVerdict(node, rep, nil, valkeyv1.ReasonSnapshotUnsupported, snapshotAPIMissing), nil
	case node.Spec.Persistence == nil:
		return r.snapshotVerdict(node, rep, nil, valkeyv1.ReasonSnapshotUnsupported,
			fmt.Sprintf("node %s has no persistence: there is no claim to snapshot", node.Name)), nil
	}
	vs := &snapshotv1.VolumeSnapshot{}
	if err := r.Snapshots.Get(ctx, client.ObjectKey{Namespace: node.Namespace, Name: name}, vs); err != nil {
		if !apierrors.IsNotFound(err) {
			return r.snapshotVerdict(node, rep, nil, valkeyv1.ReasonSnapshotPending, err.Error()), fmt.Errorf("get VolumeSnapshot %s: %w", name, err)
		}
		return r.createSnapshot(ctx, node, sp, rep)
	}
	return r.observeSnapshot(node, sp, rep, vs), nil
}

// createSnapshot creates the node's VolumeSnapshot once its claim is bound and a class
// fits, and reports it.
func (r *Reconciler) createSnapshot(ctx context.Context, node *valkeyv1.ValkeyNode, sp *valkeyv1.SavedPoint, rep *snapshotReport) (*snapshotReport, error) {
	claim, err := r.getClaim(ctx, node)
	if err != nil {
		return r.snapshotVerdict(node, rep, nil, valkeyv1.ReasonSnapshotPending, err.Error()), err
	}
	if reason, msg := claimNotSnapshottable(node, claim); reason != "" {
		return r.snapshotVerdict(node, rep, nil, reason, msg), nil
	}
	class, refused, err := r.snapshotClassFor(ctx, sp.VolumeSnapshotClassName, claim)
	if err != nil {
		return r.snapshotVerdict(node, rep, nil, valkeyv1.ReasonSnapshotPending, err.Error()), err
	}
	if refused != "" {
		return r.snapshotVerdict(node, rep, nil, valkeyv1.ReasonSnapshotUnsupported, refused), nil
	}
	vs := BuildSnapshot(node, sp, claim.Name, class)
	if err := r.Create(ctx, vs); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			return r.snapshotVerdict(node, rep, nil, valkeyv1.ReasonSnapshotPending, fmt.Sprintf("create VolumeSnapshot %s: %v", vs.Name, err)),
				fmt.Errorf("create VolumeSnapshot %s: %w", vs.Name, err)
		}
		// Not in the cache: the cache lags, or the snapshot lacks the operator's labels
		// (made by someone else). Look at it directly.
		live := &snapshotv1.VolumeSnapshot{}
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(vs), live); err != nil {
			return r.snapshotVerdict(node, rep, nil, valkeyv1.ReasonSnapshotPending, err.Error()), fmt.Errorf("get VolumeSnapshot %s: %w", vs.Name, err)
		}
		return r.observeSnapshot(node, sp, rep, live), nil
	}
	r.Recorder.Eventf(node, vs, corev1.EventTypeNormal, valkeyv1.EventSnapshotCreated, "CreateSnapshot",
		"created VolumeSnapshot %s of claim %s for backup %s (%s)", vs.Name, claim.Name, sp.Backup, describeSnapshotClass(class))
	return r.observeSnapshot(node, sp, rep, vs), nil
}

// claimNotSnapshottable says why the node's claim cannot be snapshotted now: a reason of
// SnapshotReady and a message, "" when it can.
func claimNotSnapshottable(node *valkeyv1.ValkeyNode, claim *corev1.PersistentVolumeClaim) (string, string) {
	name := valkeyv1.ClaimName(node.Name)
	switch {
	case !node.DeletionTimestamp.IsZero():
		return valkeyv1.ReasonSnapshotFailed, fmt.Sprintf("node %s is being deleted: its claim %s is not snapshotted", node.Name, name)
	case claim == nil:
		return valkeyv1.ReasonSnapshotPending, fmt.Sprintf("waiting for claim %s to exist before it is snapshotted", name)
	case claimOwnership(node, claim) != owned:
		return valkeyv1.ReasonSnapshotFailed, fmt.Sprintf("claim %s does not belong to node %s: it is not snapshotted", name, node.Name)
	case claim.DeletionTimestamp != nil || claim.Status.Phase == corev1.ClaimLost:
		return valkeyv1.ReasonSnapshotFailed, fmt.Sprintf("claim %s is being deleted or lost its volume: it is not snapshotted", name)
	case claim.Status.Phase != corev1.ClaimBound:
		return valkeyv1.ReasonSnapshotPending, fmt.Sprintf("waiting for claim %s to be bound before it is snapshotted", name)
	}
	return "", ""
}

// BuildSnapshot is the VolumeSnapshot of a node's claim for the backup of a saved point:
// named SnapshotName(backup, shard), with the node's labels and the backup's, owned by the
// backup (its deletion deletes the snapshot), of the given class ("" for the driver's default).
func BuildSnapshot(node *valkeyv1.ValkeyNode, sp *valkeyv1.SavedPoint, claim, class string) *snapshotv1.VolumeSnapshot {
	labels := valkeyv1.NodeLabels(node)
	labels[valkeyv1.LabelBackup] = sp.Backup
	vs := &snapshotv1.VolumeSnapshot{
		ObjectMeta: metav1.ObjectMeta{
			Name:      valkeyv1.SnapshotName(sp.Backup, node.Spec.Shard),
			Namespace: node.Namespace,
			Labels:    labels,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: valkeyv1.GroupVersion.String(), Kind: backupKind, Name: sp.Backup, UID: sp.BackupUID,
			}},
		},
		Spec: snapshotv1.VolumeSnapshotSpec{Source: snapshotv1.VolumeSnapshotSource{PersistentVolumeClaimName: ptr.To(claim)}},
	}
	if class != "" {
		vs.Spec.VolumeSnapshotClassName = ptr.To(class)
	}
	return vs
}

// snapshotConflict says why a VolumeSnapshot under the node's snapshot name is not the
// one of this backup and claim ("" when it is).
func snapshotConflict(vs *snapshotv1.VolumeSnapshot, sp *valkeyv1.SavedPoint, claim string) string {
	if src := ptr.Deref(vs.Spec.Source.PersistentVolumeClaimName, ""); src != claim {
		if src == "" {
			src = "no claim (a pre-provisioned snapshot)"
		}
		return fmt.Sprintf("VolumeSnapshot %s exists but is of %s, not claim %s: it is left alone; delete or rename it, then take the backup again",
			vs.Name, src, claim)
	}
	for _, ref := range vs.OwnerReferences {
		if ref.Kind == backupKind && ref.UID == sp.BackupUID {
			return ""
		}
	}
	owner := vs.Labels[valkeyv1.LabelBackup]
	if owner == "" {
		owner = "no backup"
	}
	return fmt.Sprintf("VolumeSnapshot %s exists but belongs to %s, not to backup %s (uid %s): it is left alone; delete or rename it, then take the backup again",
		vs.Name, owner, sp.Backup, sp.BackupUID)
}

// earlierBackupOfSameName is the UID of the backup owning vs when that is an earlier
// ValkeyBackup of the same name as the saved point's (deleted, since the name is taken
// again): the garbage collector deletes vs, and the snapshot is taken once it is gone.
// "" when vs is not such a leftover.
func earlierBackupOfSameName(vs *snapshotv1.VolumeSnapshot, sp *valkeyv1.SavedPoint) types.UID {
	for _, ref := range vs.OwnerReferences {
		if ref.Kind == backupKind && ref.Name == sp.Backup && ref.UID != sp.BackupUID {
			return ref.UID
		}
	}
	return ""
}

// observeSnapshot reports an existing VolumeSnapshot: ready, failed (its status.error), cut
// (it has a creationTime) or pending, or failed when it is another backup's or another claim's.
func (r *Reconciler) observeSnapshot(node *valkeyv1.ValkeyNode, sp *valkeyv1.SavedPoint, rep *snapshotReport, vs *snapshotv1.VolumeSnapshot) *snapshotReport {
	claim := valkeyv1.ClaimName(node.Name)
	if uid := earlierBackupOfSameName(vs, sp); uid != "" {
		return r.snapshotVerdict(node, rep, vs, valkeyv1.ReasonSnapshotPending, fmt.Sprintf(
			"VolumeSnapshot %s belongs to an earlier backup named %s (uid %s), now deleted: waiting for the garbage collector to delete it before the snapshot of this backup is taken",
			vs.Name, sp.Backup, uid))
	}
	if conflict := snapshotConflict(vs, sp, claim); conflict != "" {
		return r.snapshotVerdict(node, rep, vs, valkeyv1.ReasonSnapshotFailed, conflict)
	}
	st := vs.Status
	size := "not reported"
	if st != nil && st.RestoreSize != nil {
		rep.Status.RestoreSize = st.RestoreSize.String()
		size = rep.Status.RestoreSize
	}
	if st != nil && st.CreationTime != nil {
		rep.Status.CreationTime = st.CreationTime.DeepCopy()
	}
	switch {
	case st != nil && ptr.Deref(st.ReadyToUse, false):
		rep.Status.ReadyToUse = true
		return r.snapshotVerdict(node, rep, vs, valkeyv1.ReasonSnapshotReady,
			fmt.Sprintf("VolumeSnapshot %s of claim %s is ready to use (restore size %s)", vs.Name, claim, size))
	case st != nil && st.Error != nil && st.BoundVolumeSnapshotContentName != nil:
		return r.snapshotVerdict(node, rep, vs, valkeyv1.ReasonSnapshotFailed,
			fmt.Sprintf("VolumeSnapshot %s of claim %s failed: %s", vs.Name, claim, ptr.Deref(st.Error.Message, "no message")))
	case st != nil && st.Error != nil:
		// Before its content is bound, an error is the snapshot-controller's, which retries
		// (a driver that serves its contents itself binds them after the first try).
		return r.snapshotVerdict(node, rep, vs, valkeyv1.ReasonSnapshotPending,
			fmt.Sprintf("VolumeSnapshot %s of claim %s has no content yet; the snapshot-controller retries after: %s", vs.Name, claim, ptr.Deref(st.Error.Message, "no message")))
	}
	if rep.Status.CreationTime != nil {
		return r.snapshotVerdict(node, rep, vs, valkeyv1.ReasonSnapshotCut, fmt.Sprintf(
			"VolumeSnapshot %s of claim %s was cut at %s (its content is fixed): waiting for the CSI driver to make it ready to use",
			vs.Name, claim, rep.Status.CreationTime.UTC().Format(time.RFC3339)))
	}
	return r.snapshotVerdict(node, rep, vs, valkeyv1.ReasonSnapshotPending,
		fmt.Sprintf("VolumeSnapshot %s of claim %s is being taken: waiting for the snapshot-controller and the CSI driver to make it ready to use", vs.Name, claim))
}

// snapshotVerdict sets SnapshotReady with reason and message, and records a Warning event
// (reason: the condition's) when it turns to a failure reason for the node's backup.
func (r *Reconciler) snapshotVerdict(node *valkeyv1.ValkeyNode, rep *snapshotReport, vs *snapshotv1.VolumeSnapshot, reason, msg string) *snapshotReport {
	rep.Cond = status.Condition(valkeyv1.ConditionSnapshotReady, reason == valkeyv1.ReasonSnapshotReady, reason, msg)
	if reason == valkeyv1.ReasonSnapshotReady || reason == valkeyv1.ReasonSnapshotPending || reason == valkeyv1.ReasonSnapshotCut {
		return rep
	}
	cur := status.Get(node.Status.Conditions, valkeyv1.ConditionSnapshotReady)
	var prev string
	if v := node.Status.Volume; v != nil && v.Snapshot != nil {
		prev = v.Snapshot.Backup
	}
	if cur != nil && cur.Reason == reason && prev == rep.Status.Backup {
		return rep
	}
	if vs != nil {
		r.Recorder.Eventf(node, vs, corev1.EventTypeWarning, reason, "SnapshotClaim", "%s", msg)
	} else {
		r.Recorder.Eventf(node, nil, corev1.EventTypeWarning, reason, "SnapshotClaim", "%s", msg)
	}
	return rep
}

// describeSnapshotClass names a snapshot's class for messages.
func describeSnapshotClass(class string) string {
	if class == "" {
		return "the default VolumeSnapshotClass of the claim's driver, picked by the snapshot-controller"
	}
	return "VolumeSnapshotClass " + class
}
