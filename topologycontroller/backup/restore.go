package backup

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
	"valkey.io/operator/topologycontroller/round"
)

// A cluster with spec.restoreFrom starts one node per shard from the backup's snapshot of
// that shard (spec.restore on the node: the volume controller creates its claim from the
// snapshot, valkey-start prepares its nodes.conf). Such a node starts alone, as a primary
// that claims the slots of its keys itself (Valkey's startup check of a primary's data
// against its slot table), and knows none of the backed-up cluster's members. Until every
// shard's restored node has joined, the cluster assigns no slot and replicates nothing: a
// slot handed out earlier would be one the restored node claims too. See docs/contract.md,
// "Restore".

// +kubebuilder:rbac:groups=valkey.io,resources=valkeybackups,verbs=get;list;watch

// RestorePlan is what fan-out and forming need of a cluster restored from a backup.
type RestorePlan struct {
	backup   string
	identity valkeyv1.RestoreIdentity
	// replica is the replica index of each shard's restored node, snapshot its snapshot.
	replica  map[int32]int32
	snapshot map[int32]string
	// restored: the cluster's Restored is True; the backup is no longer read, the restored
	// nodes keep spec.restore without the snapshot name.
	restored bool
}

// Blocked says why a restore cannot start: a Restored reason and a message.
type Blocked struct{ Reason, Msg string }

// PlanRestore reads the backup vc restores from: nil without spec.restoreFrom, a
// Blocked when the backup is missing, not Completed or of another shard count.
func (sv *Saver) PlanRestore(ctx context.Context, vc *valkeyv1.ValkeyCluster) (*RestorePlan, *Blocked, error) {
	if vc.Spec.RestoreFrom == "" {
		return nil, nil, nil
	}
	plan := &RestorePlan{backup: vc.Spec.RestoreFrom}
	if status.IsTrue(vc.Status.Conditions, valkeyv1.ConditionRestored) {
		plan.restored = true
		return plan, nil, nil
	}
	var b valkeyv1.ValkeyBackup
	if err := sv.Client.Get(ctx, client.ObjectKey{Namespace: vc.Namespace, Name: vc.Spec.RestoreFrom}, &b); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &Blocked{valkeyv1.ReasonRestoreSourceMissing, fmt.Sprintf(
				"the ValkeyBackup %s does not exist in namespace %s: create it, or delete this cluster and restore from a backup that exists; no node is created until then", vc.Spec.RestoreFrom, vc.Namespace)}, nil
		}
		return nil, nil, fmt.Errorf("get ValkeyBackup %s: %w", vc.Spec.RestoreFrom, err)
	}
	if blocked := checkBackup(vc, &b); blocked != nil {
		return nil, blocked, nil
	}
	plan.identity = valkeyv1.RestoreFresh
	if b.Spec.ClusterName == vc.Name {
		plan.identity = valkeyv1.RestoreKeep
	}
	plan.replica, plan.snapshot = map[int32]int32{}, map[int32]string{}
	for _, sh := range b.Status.Shards {
		idx := sh.ReplicaIndex
		if idx > vc.Spec.Replicas {
			idx = 0 // a cluster with fewer replicas than the backed-up one
		}
		plan.replica[sh.Shard], plan.snapshot[sh.Shard] = idx, sh.SnapshotName
	}
	return plan, nil, nil
}

// checkBackup tells why backup b cannot be restored into vc; nil when it can.
func checkBackup(vc *valkeyv1.ValkeyCluster, b *valkeyv1.ValkeyBackup) *Blocked {
	if b.Status.Phase != valkeyv1.BackupCompleted {
		phase, what := string(b.Status.Phase), "the restore starts once it completes"
		if phase == "" {
			phase = string(valkeyv1.BackupPending)
		}
		if b.Status.Phase == valkeyv1.BackupFailed {
			what = "it never will: delete this cluster and restore from another backup"
		}
		return &Blocked{valkeyv1.ReasonRestoreSourceIncomplete, fmt.Sprintf(
			"the ValkeyBackup %s is %s, not Completed: %s; no node is created until then", b.Name, phase, what)}
	}
	if b.Status.ShardCount != vc.Spec.Shards {
		return &Blocked{valkeyv1.ReasonRestoreRefused, fmt.Sprintf(
			"this cluster has %d shards, the ValkeyBackup %s has %d: a restore needs the backup's shard count (it does not re-balance); delete this cluster and create it with shards: %d; no node is created",
			vc.Spec.Shards, b.Name, b.Status.ShardCount, b.Status.ShardCount)}
	}
	have := map[int32]bool{}
	for _, sh := range b.Status.Shards {
		have[sh.Shard] = sh.SnapshotName != ""
	}
	for s := int32(0); s < b.Status.ShardCount; s++ {
		if !have[s] {
			return &Blocked{valkeyv1.ReasonRestoreSourceIncomplete, fmt.Sprintf(
				"the ValkeyBackup %s is Completed but has no snapshot of shard %d: restore from another backup; no node is created", b.Name, s)}
		}
	}
	return nil
}

// NodeRestore is spec.restore of node (shard, replica); existing is the node as it is
// (nil when it is to be created). Once restored, a node keeps its backup and identity, so
// its pod does not change, but not the snapshot name: a claim made later starts empty.
func (p *RestorePlan) NodeRestore(shard, replica int32, existing *valkeyv1.ValkeyNode) *valkeyv1.NodeRestore {
	switch {
	case p == nil:
		return nil
	case p.restored:
		if existing == nil || existing.Spec.Restore == nil {
			return nil
		}
		return &valkeyv1.NodeRestore{Backup: existing.Spec.Restore.Backup, Identity: existing.Spec.Restore.Identity}
	case existing != nil && existing.Spec.Restore != nil:
		return existing.Spec.Restore.DeepCopy()
	}
	idx, ok := p.replica[shard]
	if !ok || idx != replica {
		return nil
	}
	return &valkeyv1.NodeRestore{Backup: p.backup, SnapshotName: p.snapshot[shard], Identity: p.identity}
}

// restoredNodes are the nodes of st that start from the backup, by shard.
func (st *Round) restoredNodes() map[int32]*valkeyv1.ValkeyNode {
	out := map[int32]*valkeyv1.ValkeyNode{}
	for _, n := range st.Nodes {
		if n.Spec.Restore != nil && n.DeletionTimestamp.IsZero() && metav1.IsControlledBy(n, st.Cluster) {
			out[n.Spec.Shard] = n
		}
	}
	return out
}

// HoldForRestore is the converge phase that, while the cluster is being restored, stops
// the round before replicas are attached and slots assigned until every shard's restored
// node has joined as a primary (with the slots of its keys, claimed as it loaded them) on
// the claim made from its snapshot (onSnapshot).
func (sv *Saver) HoldForRestore(_ context.Context, st *Round) (bool, error) {
	if st.restore == nil || st.restore.restored {
		return false, nil
	}
	restored := st.restoredNodes()
	var waiting []string
	for s := int32(0); s < st.Cluster.Spec.Shards; s++ {
		n := restored[s]
		if n == nil {
			waiting = append(waiting, fmt.Sprintf("shard %d has no restored node yet", s))
			continue
		}
		if m := st.Members[n.Name]; !st.InCluster(m) || !m.Self.Primary() || !onSnapshot(n) {
			waiting = append(waiting, n.Name)
		}
	}
	if len(waiting) == 0 {
		return false, nil
	}
	st.Wait(fmt.Sprintf("restoring from %s: waiting for the restored nodes to start on their snapshots and join as primaries (%s) before attaching replicas or assigning slots",
		st.restore.backup, strings.Join(waiting, ", ")), time.Second)
	return true, nil
}

// NoteRestore decides the cluster's Restored condition this round: True once every shard's
// restored node is joined, a primary, owns slots, and the volume controller reports its
// claim as made from its snapshot (with an event the first time). Serving proves nothing of
// where the data came from: a node on a claim retained under its name serves as well.
func (sv *Saver) NoteRestore(st *Round) {
	p := st.restore
	if p == nil {
		return
	}
	if p.restored {
		c := *status.Get(st.Cluster.Status.Conditions, valkeyv1.ConditionRestored)
		c.ObservedGeneration = 0
		st.restored = &c
		return
	}
	restored := st.restoredNodes()
	for s := int32(0); s < st.Cluster.Spec.Shards; s++ {
		if c := restoreVolumeRefused(p.backup, s, restored[s]); c != nil && !restoredServes(st, restored[s]) {
			sv.restoreRefusedEvent(st, c)
			st.restored = c
			return
		}
		if n := restored[s]; n == nil || !restoredServes(st, n) {
			c := status.Condition(valkeyv1.ConditionRestored, false, valkeyv1.ReasonRestoring, fmt.Sprintf(
				"restoring from %s: the restored node of shard %d has not joined as its primary with the slots of its keys yet", p.backup, s))
			st.restored = &c
			return
		}
		if n := restored[s]; !onSnapshot(n) {
			c := status.Condition(valkeyv1.ConditionRestored, false, valkeyv1.ReasonRestoring, fmt.Sprintf(
				"restoring from %s: the restored node %s of shard %d serves, but the volume controller does not report its claim as made from VolumeSnapshot %s (status.volume.restoredFrom %q): its data may not be the backup's",
				p.backup, n.Name, s, n.Spec.Restore.SnapshotName, restoredFrom(n)))
			st.restored = &c
			return
		}
	}
	msg := fmt.Sprintf("restored from %s: %d shards, each from its snapshot (node identities %s)", p.backup, st.Cluster.Spec.Shards, strings.ToLower(string(p.identity)))
	c := status.Condition(valkeyv1.ConditionRestored, true, valkeyv1.ReasonRestored, msg)
	st.restored = &c
	sv.Event(st.State, nil, corev1.EventTypeNormal, valkeyv1.EventRestored, "Restore", "%s", msg)
}

// restoredServes tells whether restored node n is joined as its shard's primary and owns
// slots.
func restoredServes(st *Round, n *valkeyv1.ValkeyNode) bool {
	m := st.Members[n.Name]
	return st.Joined(n) && m.Reachable() && m.Self.Primary() && m.Self.SlotCount() > 0 && st.Primary[n.Spec.Shard] == m
}

// onSnapshot tells whether the volume controller reports restored node n's claim as made
// from the snapshot n restores (status.volume.restoredFrom): the evidence that n's data
// starts from the backup.
func onSnapshot(n *valkeyv1.ValkeyNode) bool {
	r := n.Spec.Restore
	return r != nil && r.SnapshotName != "" && restoredFrom(n) == r.SnapshotName
}

// restoredFrom is n's status.volume.restoredFrom ("" when absent).
func restoredFrom(n *valkeyv1.ValkeyNode) string {
	if n.Status.Volume == nil {
		return ""
	}
	return n.Status.Volume.RestoredFrom
}

// restoreVolumeRefused is Restored=False RestoreRefused for shard s while its restored node
// n cannot start on its snapshot because a claim not made from it holds its claim name
// (VolumeReady=False, RestoreClaimExists), or may never start on it because its volume is
// full or its persistence failing (VolumeHealthy=False). Nil otherwise.
func restoreVolumeRefused(backup string, s int32, n *valkeyv1.ValkeyNode) *metav1.Condition {
	if n == nil {
		return nil
	}
	if v := status.Get(n.Status.Conditions, valkeyv1.ConditionVolumeReady); v != nil && v.Status == metav1.ConditionFalse && v.Reason == valkeyv1.ReasonRestoreClaimExists {
		c := status.Condition(valkeyv1.ConditionRestored, false, valkeyv1.ReasonRestoreRefused, fmt.Sprintf(
			"restoring from %s: the restored node %s of shard %d reports VolumeReady=False (%s): %s; the restore goes on once that claim is gone",
			backup, n.Name, s, v.Reason, v.Message))
		return &c
	}
	v := round.UnhealthyVolume(n)
	if v == nil || (v.Reason != valkeyv1.ReasonVolumeFull && v.Reason != valkeyv1.ReasonPersistenceFailing) {
		return nil
	}
	c := status.Condition(valkeyv1.ConditionRestored, false, valkeyv1.ReasonRestoreRefused, fmt.Sprintf(
		"restoring from %s: the restored node %s of shard %d reports VolumeHealthy=False (%s): %s; raise spec.persistence.size (at least twice the snapshot's data set) or free space; the restore goes on once the volume is healthy",
		backup, n.Name, s, v.Reason, v.Message))
	return &c
}

// restoreRefusedEvent sends a Warning event for c when the cluster's Restored does not say
// it already.
func (sv *Saver) restoreRefusedEvent(st *Round, c *metav1.Condition) {
	if cur := status.Get(st.Cluster.Status.Conditions, valkeyv1.ConditionRestored); cur == nil || cur.Reason != c.Reason || cur.Message != c.Message {
		sv.Event(st.State, nil, corev1.EventTypeWarning, c.Reason, "Restore", "%s", c.Message)
	}
}
