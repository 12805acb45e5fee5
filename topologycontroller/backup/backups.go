package backup

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
	"valkey.io/operator/topologycontroller/round"
)

// A cluster's backups run from its reconcile, which knows its members, their roles and
// offsets, and whether the cluster is busy: one backup at a time, the oldest first. A
// backup's progress is written on the ValkeyBackup itself (status.shards holds each shard
// once its point is saved), so the saved points the nodes carry (see savedPoints) follow
// from the backups as read; only the BGSAVEs in flight are kept in memory (saveBook), and a
// restarted controller saves those shards again.

// Run advances the oldest unfinished backup of the cluster, tells the others that they
// wait, and sets the saved points the nodes' status carries.
func (sv *Saver) Run(ctx context.Context, st *Round) {
	list, err := sv.clusterBackups(ctx, st.Cluster)
	if err != nil {
		log.FromContext(ctx).Info("list the cluster's backups; retrying", "error", err.Error())
		st.lookAgain(time.Second)
		return
	}
	sv.saves.keepOnly(st.Cluster.UID, list)
	var active *valkeyv1.ValkeyBackup
	for _, b := range list {
		if b.Finished() || (b.Status.ClusterUID != "" && b.Status.ClusterUID != st.Cluster.UID) {
			continue // a backup of a deleted cluster of this name: see backupReconciler
		}
		if err := sv.backupStep(ctx, st, b, active); err != nil {
			log.FromContext(ctx).Info("backup step failed; retrying", "backup", b.Name, "error", err.Error())
			st.lookAgain(time.Second)
		}
		if active == nil && !b.Finished() {
			active = b
		}
	}
	st.savedPoints = savedPoints(st.Cluster, active)
}

// backupStep handles one unfinished backup: it waits behind active (an older backup), or
// is refused, or advances.
func (sv *Saver) backupStep(ctx context.Context, st *Round, b, active *valkeyv1.ValkeyBackup) error {
	switch {
	case st.Cluster.Spec.Persistence == nil:
		sv.backupEvent(b, nil, corev1.EventTypeWarning, valkeyv1.ReasonPersistenceRequired, "Refuse",
			"the ValkeyCluster %s has no persistence: there is no volume to snapshot. Add spec.persistence to the cluster (its nodes roll onto claims), then create a new backup", st.Cluster.Name)
		return sv.setBackup(ctx, b, backupFailed(valkeyv1.ReasonPersistenceRequired,
			fmt.Sprintf("the ValkeyCluster %s has no persistence: add spec.persistence, then create a new backup", st.Cluster.Name)))
	case active != nil:
		return sv.setBackup(ctx, b, backupPending(valkeyv1.ReasonWaitingForBackup,
			fmt.Sprintf("waiting for the backup %s of the same cluster to finish", active.Name)))
	}
	if b.Status.Phase == "" || b.Status.Phase == valkeyv1.BackupPending {
		if busy := st.busy(); busy != "" {
			st.lookAgain(2 * round.Short)
			return sv.setBackup(ctx, b, backupPending(valkeyv1.ReasonClusterBusy, "waiting for the cluster to settle: "+busy))
		}
		if err := sv.setBackup(ctx, b, backupStarted(st.Cluster)); err != nil {
			return err
		}
	}
	return sv.advanceBackup(ctx, st, b)
}

// advanceBackup saves the shards not saved yet, then completes or fails the backup on
// what the saved nodes' SnapshotReady says.
func (sv *Saver) advanceBackup(ctx context.Context, st *Round, b *valkeyv1.ValkeyBackup) error {
	if b.Status.Phase == valkeyv1.BackupSaving {
		if err := sv.saveShards(ctx, st, b); err != nil {
			return err
		}
	}
	if b.Finished() {
		return nil
	}
	if err := sv.checkSnapshots(ctx, st, b); err != nil || b.Finished() {
		return err
	}
	return sv.checkCut(ctx, st, b)
}

// clusterBackups lists the cluster's ValkeyBackups, oldest first.
func (sv *Saver) clusterBackups(ctx context.Context, vc *valkeyv1.ValkeyCluster) ([]*valkeyv1.ValkeyBackup, error) {
	var list valkeyv1.ValkeyBackupList
	if err := sv.Client.List(ctx, &list, client.InNamespace(vc.Namespace), client.MatchingFields{ClusterField: vc.Name}); err != nil {
		return nil, err
	}
	out := make([]*valkeyv1.ValkeyBackup, 0, len(list.Items))
	for i := range list.Items {
		if list.Items[i].DeletionTimestamp.IsZero() {
			out = append(out, &list.Items[i])
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].CreationTimestamp, out[j].CreationTimestamp
		if !a.Equal(&b) {
			return a.Before(&b)
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

// Underway names the cluster's backup that holds slot moves ("" when none): one
// Saving, or Snapshotting until the snapshot of each of its shards is cut. A slot moved
// before then could be in two shards' points or in none.
func (sv *Saver) Underway(ctx context.Context, st *Round) string {
	list, err := sv.clusterBackups(ctx, st.Cluster)
	if err != nil {
		return ""
	}
	for _, b := range list {
		if b.Status.ClusterUID != st.Cluster.UID {
			continue
		}
		switch b.Status.Phase {
		case valkeyv1.BackupSaving:
			return b.Name
		case valkeyv1.BackupSnapshotting:
			if !snapshotsCut(st, b) {
				return b.Name
			}
		}
	}
	return ""
}

// snapshotsCut tells whether the snapshot of every shard of b is cut (it has a creationTime
// or is ready to use): the volumes' content in them is fixed.
func snapshotsCut(st *Round, b *valkeyv1.ValkeyBackup) bool {
	return status.Count32(len(b.Status.Shards)) >= b.Status.ShardCount && len(uncutSnapshots(st, b)) == 0
}

// uncutSnapshots describes the shards of b saved so far whose snapshot is not cut yet.
func uncutSnapshots(st *Round, b *valkeyv1.ValkeyBackup) []string {
	var out []string
	for _, e := range b.Status.Shards {
		n := st.Node(e.Node)
		if n == nil {
			out = append(out, fmt.Sprintf("shard %d (node %s is gone)", e.Shard, e.Node))
			continue
		}
		snap := nodeSnapshot(n, b.Name)
		if snap == nil || (!snap.ReadyToUse && snap.CreationTime == nil) {
			out = append(out, fmt.Sprintf("shard %d (VolumeSnapshot %s of node %s)", e.Shard, valkeyv1.SnapshotName(b.Name, e.Shard), e.Node))
		}
	}
	return out
}

// savedPoints are the saved points of the backup under way, by node name: one per shard
// saved so far, while the backup still needs them (it is Saving or Snapshotting). They go
// when it completes, fails or is deleted.
func savedPoints(vc *valkeyv1.ValkeyCluster, b *valkeyv1.ValkeyBackup) map[string]*valkeyv1.SavedPoint {
	if b == nil || (b.Status.Phase != valkeyv1.BackupSaving && b.Status.Phase != valkeyv1.BackupSnapshotting) || b.Status.ClusterUID != vc.UID {
		return nil
	}
	out := map[string]*valkeyv1.SavedPoint{}
	for _, s := range b.Status.Shards {
		sp := &valkeyv1.SavedPoint{Backup: b.Name, BackupUID: b.UID, Offset: s.Offset}
		if s.SavedAt != nil {
			sp.SavedAt = *s.SavedAt
		}
		if b.Spec.VolumeSnapshotClassName != nil {
			sp.VolumeSnapshotClassName = *b.Spec.VolumeSnapshotClassName
		}
		out[s.Node] = sp
	}
	return out
}

// backupUIDs are the UIDs of backups.
func backupUIDs(list []*valkeyv1.ValkeyBackup) map[types.UID]bool {
	out := map[types.UID]bool{}
	for _, b := range list {
		if !b.Finished() {
			out[b.UID] = true
		}
	}
	return out
}
