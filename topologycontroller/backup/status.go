package backup

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// A ValkeyBackup's status has one writer, the topology controller: it is patched (a merge
// patch of what changed, refused when b changed since it was read), and b is updated in
// place so that the rest of a round sees it.

// backupChange changes a backup's status.
type backupChange func(*valkeyv1.ValkeyBackupStatus, int64)

// setBackup applies change to b's status and writes it when it changed.
func (sv *Saver) setBackup(ctx context.Context, b *valkeyv1.ValkeyBackup, change backupChange) error {
	return patchBackup(ctx, sv.Client, b, change)
}

func patchBackup(ctx context.Context, c client.Client, b *valkeyv1.ValkeyBackup, change backupChange) error {
	before := b.DeepCopy()
	change(&b.Status, b.Generation)
	if equality.Semantic.DeepEqual(before.Status, b.Status) {
		return nil
	}
	if err := c.Status().Patch(ctx, b, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		b.Status = before.Status
		return fmt.Errorf("write the status of ValkeyBackup %s: %w", b.Name, err)
	}
	return nil
}

// backupReady sets the backup's Ready condition (lastTransitionTime kept while its status
// does not change).
func backupReady(st *valkeyv1.ValkeyBackupStatus, gen int64, ok bool, reason, msg string) {
	c := status.Condition(valkeyv1.ConditionReady, ok, reason, msg)
	c.ObservedGeneration = gen
	meta.SetStatusCondition(&st.Conditions, c)
}

// backupPending: the backup waits (for its cluster, an older backup, or a busy cluster).
func backupPending(reason, msg string) backupChange {
	return func(st *valkeyv1.ValkeyBackupStatus, gen int64) {
		st.Phase = valkeyv1.BackupPending
		backupReady(st, gen, false, reason, msg)
	}
}

// backupFailed: the backup ends without snapshots of every shard.
func backupFailed(reason, msg string) backupChange {
	return func(st *valkeyv1.ValkeyBackupStatus, gen int64) {
		st.Phase = valkeyv1.BackupFailed
		backupReady(st, gen, false, reason, msg)
	}
}

// backupStarted: the backup of vc starts saving.
func backupStarted(vc *valkeyv1.ValkeyCluster) backupChange {
	return func(st *valkeyv1.ValkeyBackupStatus, gen int64) {
		now := metav1.NewTime(time.Now().Truncate(time.Second))
		st.Phase, st.ClusterUID, st.ShardCount, st.StartedAt, st.Shards = valkeyv1.BackupSaving, vc.UID, vc.Spec.Shards, &now, nil
		backupReady(st, gen, false, valkeyv1.ReasonSaving, fmt.Sprintf("saving %d shards", vc.Spec.Shards))
	}
}

// backupShardSaved records a shard's saved point; the last one moves the backup to
// Snapshotting.
func backupShardSaved(s valkeyv1.BackupShard) backupChange {
	return func(st *valkeyv1.ValkeyBackupStatus, gen int64) {
		st.Shards = append(st.Shards, s)
		if status.Count32(len(st.Shards)) < st.ShardCount {
			backupReady(st, gen, false, valkeyv1.ReasonSaving, fmt.Sprintf("%d of %d shards saved", len(st.Shards), st.ShardCount))
			return
		}
		st.Phase = valkeyv1.BackupSnapshotting
		backupReady(st, gen, false, valkeyv1.ReasonSnapshotting, fmt.Sprintf("every shard saved; waiting for %d volume snapshots", st.ShardCount))
	}
}

// backupCompleted: every shard's snapshot is ready to use.
func backupCompleted(shards []valkeyv1.BackupShard) backupChange {
	return func(st *valkeyv1.ValkeyBackupStatus, gen int64) {
		now := metav1.NewTime(time.Now().Truncate(time.Second))
		st.Phase, st.Shards, st.CompletedAt = valkeyv1.BackupCompleted, shards, &now
		backupReady(st, gen, true, valkeyv1.ReasonBackupCompleted, fmt.Sprintf("%d shards snapshotted", len(shards)))
	}
}

// backupEvent records an event on the backup, related to the node it is about (nil when
// none: a node makes the events of two shards distinct).
func (sv *Saver) backupEvent(b *valkeyv1.ValkeyBackup, node *valkeyv1.ValkeyNode, eventType, reason, action, msg string, args ...any) {
	recordBackupEvent(sv.Recorder, b, node, eventType, reason, action, msg, args...)
}

func recordBackupEvent(rec recorder.EventRecorder, b *valkeyv1.ValkeyBackup, node *valkeyv1.ValkeyNode, eventType, reason, action, msg string, args ...any) {
	var related runtime.Object
	if node != nil {
		related = node
	}
	rec.Eventf(b, related, eventType, reason, action, msg, args...)
}
