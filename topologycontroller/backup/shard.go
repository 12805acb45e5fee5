package backup

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/clusternodes"
	"valkey.io/operator/topologycontroller/round"
)

// saveFailure is a save the server refused or that failed on it: the backup fails with
// SaveFailed. Any other error (a connection lost) is retried.
type saveFailure struct{ msg string }

func (e *saveFailure) Error() string { return e.msg }

// failedSave is the reason and message a backup fails with on err: a saveFailure
// (SaveFailed) or a volumeFailure (its own reason); ok is false for any other error.
func failedSave(err error) (reason, msg string, ok bool) {
	if sf := (*saveFailure)(nil); errors.As(err, &sf) {
		return valkeyv1.ReasonSaveFailed, sf.msg, true
	}
	if vf := (*volumeFailure)(nil); errors.As(err, &vf) {
		return valkeyv1.ReasonBackupVolumeUnhealthy, vf.Error(), true
	}
	return "", "", false
}

// saveShards advances the save of every shard not saved yet; a shard saved is recorded in
// the backup's status at once (the node then carries its saved point).
func (sv *Saver) saveShards(ctx context.Context, st *Round, b *valkeyv1.ValkeyBackup) error {
	for s := int32(0); s < b.Status.ShardCount; s++ {
		if shardSaved(b, s) {
			continue
		}
		done, err := sv.saveShard(ctx, st, b, s)
		if reason, msg, failed := failedSave(err); failed {
			sv.saves.set(st.Cluster.UID, b.UID, s, nil)
			sv.backupEvent(b, nil, corev1.EventTypeWarning, reason, "Save", "shard %d: %s", s, msg)
			return sv.setBackup(ctx, b, backupFailed(reason, fmt.Sprintf("shard %d: %s", s, msg)))
		}
		if err != nil {
			return fmt.Errorf("save shard %d: %w", s, err)
		}
		if done == nil {
			continue
		}
		if err := sv.setBackup(ctx, b, backupShardSaved(*done)); err != nil {
			return err
		}
		sv.saves.set(st.Cluster.UID, b.UID, s, nil)
		sv.backupEvent(b, st.Node(done.Node), corev1.EventTypeNormal, valkeyv1.EventPointSaved, "Save",
			"shard %d saved on %s at offset %d", s, done.Node, done.Offset)
	}
	if b.Status.Phase == valkeyv1.BackupSaving {
		st.lookAgain(round.Short)
	}
	return nil
}

// shardSaved tells whether the backup's status records shard s.
func shardSaved(b *valkeyv1.ValkeyBackup, s int32) bool {
	for _, e := range b.Status.Shards {
		if e.Shard == s {
			return true
		}
	}
	return false
}

// saveShard advances shard s's save as far as it goes without waiting and returns the
// shard's entry once its point is saved (nil while it is not).
func (sv *Saver) saveShard(ctx context.Context, st *Round, b *valkeyv1.ValkeyBackup, s int32) (*valkeyv1.BackupShard, error) {
	ss := sv.saves.shard(b.UID, s)
	if ss == nil {
		var err error
		if ss, err = sv.startSave(ctx, st, s); ss == nil || err != nil {
			return nil, err
		}
		sv.saves.set(st.Cluster.UID, b.UID, s, ss)
	}
	for ss.stage != stageSaved {
		m := st.Members[ss.node]
		if !m.Reachable() || m.Deleting() {
			// The node chosen went away: the shard is saved again from the start.
			sv.saves.set(st.Cluster.UID, b.UID, s, nil)
			return nil, nil
		}
		if c := round.UnhealthyVolume(m.Node); c != nil && (c.Reason != valkeyv1.ReasonVolumeFull || ss.stage < stageSaving) {
			// A full volume fails the backup before its BGSAVE is sent; once one runs, its
			// own temporary file may fill the volume for a while, and only a failed save
			// (PersistenceFailing) stops it.
			return nil, &volumeFailure{node: m.Node.Name, cond: *c}
		}
		advanced, err := sv.saveStep(ctx, st, m, ss)
		if err != nil || !advanced {
			return nil, err
		}
	}
	m := st.Members[ss.node]
	at := metav1.NewMicroTime(ss.at)
	return &valkeyv1.BackupShard{Shard: s, Node: m.Node.Name, ReplicaIndex: m.Node.Spec.ReplicaIndex,
		NodeID: m.ID(), Offset: ss.offset, SavedAt: &at}, nil
}

// startSave picks the node to save shard s on (an in-sync replica, else the primary) and
// takes the saved point: T, then the primary's replication offset read after T, so every
// write the primary acknowledged before T is within the offset.
func (sv *Saver) startSave(ctx context.Context, st *Round, s int32) (*shardSave, error) {
	p := st.Primary[s]
	if !p.Reachable() {
		return nil, nil
	}
	chosen := inSyncReplica(st, s, p)
	at := time.Now()
	info, err := st.Conns.Str(ctx, p.Addr, "INFO", "replication")
	if err != nil {
		return nil, err
	}
	offset := round.ReplicationOffset(clusternodes.ParseInfo(info))
	if offset < 0 {
		return nil, fmt.Errorf("no master_repl_offset in INFO of %s", p.Node.Name)
	}
	ss := &shardSave{node: p.Node.Name, primary: p.Node.Name, at: at, offset: offset, stage: stageBGSave}
	if chosen != nil {
		ss.node, ss.stage, ss.deadline = chosen.Node.Name, stageCatchUp, at.Add(sv.Options.CatchUpTimeout)
	}
	return ss, nil
}

// inSyncReplica is the replica of shard s to save on: following p with its link up, its
// volume not reported unhealthy, the furthest along (then the lowest replica index); nil
// when there is none.
func inSyncReplica(st *Round, s int32, p *round.Member) *round.Member {
	var best *round.Member
	for _, m := range st.SortedMembers() {
		if m.Node.Spec.Shard != s || m == p || m.Deleting() || m.Self.Primary() || m.Self.PrimaryID != p.ID() || !m.LinkUp() || round.UnhealthyVolume(m.Node) != nil {
			continue
		}
		if best == nil || round.ReplicationOffset(m.Repl) > round.ReplicationOffset(best.Repl) {
			best = m
		}
	}
	return best
}
