package backup

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// checkSnapshots reads SnapshotReady (the volume controller's) on every node saved: one
// failed or unsupported fails the backup; all ready complete it.
func (sv *Saver) checkSnapshots(ctx context.Context, st *Round, b *valkeyv1.ValkeyBackup) error {
	shards := make([]valkeyv1.BackupShard, 0, len(b.Status.Shards))
	for _, e := range b.Status.Shards {
		n := st.Node(e.Node)
		if n == nil {
			msg := fmt.Sprintf("shard %d: node %s, saved for this backup, was deleted before its snapshot was reported ready to use; take the backup again", e.Shard, e.Node)
			sv.backupEvent(b, nil, corev1.EventTypeWarning, valkeyv1.ReasonSnapshotFailed, "Snapshot", "%s", msg)
			return sv.setBackup(ctx, b, backupFailed(valkeyv1.ReasonSnapshotFailed, msg))
		}
		snap := nodeSnapshot(n, b.Name)
		c := status.Get(n.Status.Conditions, valkeyv1.ConditionSnapshotReady)
		if snapshotFailed(n, c, b.Name, e.SavedAt) {
			msg := fmt.Sprintf("shard %d, node %s: %s", e.Shard, n.Name, c.Message)
			sv.backupEvent(b, n, corev1.EventTypeWarning, c.Reason, "Snapshot", "%s", msg)
			return sv.setBackup(ctx, b, backupFailed(c.Reason, msg))
		}
		if c == nil || c.Status != metav1.ConditionTrue || snap == nil || !snap.ReadyToUse {
			continue
		}
		e.SnapshotName, e.Size = snap.Name, snap.RestoreSize
		shards = append(shards, e)
	}
	if b.Status.Phase != valkeyv1.BackupSnapshotting || status.Count32(len(shards)) != b.Status.ShardCount {
		return nil
	}
	if err := sv.setBackup(ctx, b, backupCompleted(shards)); err != nil {
		return err
	}
	sv.backupEvent(b, nil, corev1.EventTypeNormal, valkeyv1.EventBackupCompleted, "Snapshot", "%d shards snapshotted", len(shards))
	return nil
}

// checkCut fails a Snapshotting backup whose snapshots are not all cut within
// BackupCutTimeout of its last saved point: it holds slot moves until they are (see
// Underway), so a snapshot controller or CSI driver that never cuts one would stop
// every scale and drain of the cluster. Until then it looks again at the deadline.
func (sv *Saver) checkCut(ctx context.Context, st *Round, b *valkeyv1.ValkeyBackup) error {
	if b.Status.Phase != valkeyv1.BackupSnapshotting {
		return nil
	}
	uncut := uncutSnapshots(st, b)
	if len(uncut) == 0 {
		return nil
	}
	if left := time.Until(lastSaved(b).Add(sv.Options.CutTimeout)); left > 0 {
		st.lookAgain(left)
		return nil
	}
	msg := fmt.Sprintf("%s not cut within %s of the last saved point (--backup-cut-timeout); slot moves, held until then, go on. "+
		"Check the snapshot controller and the CSI driver (kubectl describe volumesnapshot), then take the backup again",
		strings.Join(uncut, ", "), sv.Options.CutTimeout)
	sv.backupEvent(b, nil, corev1.EventTypeWarning, valkeyv1.ReasonSnapshotTimeout, "Snapshot", "%s", msg)
	return sv.setBackup(ctx, b, backupFailed(valkeyv1.ReasonSnapshotTimeout, msg))
}

// lastSaved is when the last of b's shards was saved (its start when none says).
func lastSaved(b *valkeyv1.ValkeyBackup) time.Time {
	var last time.Time
	if b.Status.StartedAt != nil {
		last = b.Status.StartedAt.Time
	}
	for _, e := range b.Status.Shards {
		if e.SavedAt != nil && e.SavedAt.After(last) {
			last = e.SavedAt.Time
		}
	}
	return last
}

// nodeSnapshot is n's snapshot status for the backup named (nil when it reports another's
// or none).
func nodeSnapshot(n *valkeyv1.ValkeyNode, backup string) *valkeyv1.SnapshotStatus {
	if n.Status.Volume == nil || n.Status.Volume.Snapshot == nil || n.Status.Volume.Snapshot.Backup != backup {
		return nil
	}
	return n.Status.Volume.Snapshot
}

// snapshotFailed tells whether c (SnapshotReady) says n's snapshot for the backup failed or
// cannot be taken: a False SnapshotFailed or SnapshotUnsupported about this backup (its
// snapshot status names it; without one, written since the point was saved).
func snapshotFailed(n *valkeyv1.ValkeyNode, c *metav1.Condition, backup string, savedAt *metav1.MicroTime) bool {
	if c == nil || c.Status != metav1.ConditionFalse || (c.Reason != valkeyv1.ReasonSnapshotFailed && c.Reason != valkeyv1.ReasonSnapshotUnsupported) {
		return false
	}
	if n.Status.Volume != nil && n.Status.Volume.Snapshot != nil {
		return n.Status.Volume.Snapshot.Backup == backup
	}
	// Conditions carry whole seconds: one written in the saved second counts as after.
	return savedAt == nil || !c.LastTransitionTime.Before(&metav1.Time{Time: savedAt.Truncate(time.Second)})
}
