package membership

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/topologycontroller/failover"
	"valkey.io/operator/topologycontroller/round"
)

// ScaleIn deletes the ValkeyNodes that are no longer wanted once they own no slots:
// removed shards (replicas before primaries, and none while the shard still holds slots:
// see shardHolds) and extra replicas (highest index first; a node that is its shard's
// primary is failed over to a remaining node first).
func (ms *Members) ScaleIn(ctx context.Context, st *round.State) (bool, error) {
	extra := unwanted(st)
	if len(extra) == 0 {
		return false, nil
	}
	shardSize := liveShardSizes(st)
	kept := keptShards(st, extra)
	acted := false
	// Replicas first, highest replica index first.
	for i := len(extra) - 1; i >= 0; i-- {
		n := extra[i]
		removedShard := n.Spec.Shard >= st.Cluster.Spec.Shards
		if removedShard && kept[n.Spec.Shard] {
			continue // every copy of its keys stays, replicas too
		}
		if m := st.Members[n.Name]; m.Reachable() && m.Self.Primary() && m.Self.SlotCount() > 0 {
			if removedShard || len(failover.SyncedReplicas(st, m)) == 0 {
				continue // the slots phase moves a removed shard's slots away first
			}
			// An extra replica index that is its shard's primary now: fail over first.
			ms.Failovers.Start(ctx, st, m, "scale-in of replicas")
			return true, nil
		}
		if removedShard && !isReplica(st, n) && shardSize[n.Spec.Shard] > 1 {
			continue // the shard's replicas go first
		}
		if !deletable(st, n) {
			continue
		}
		if sp := carriedPoint(n); sp != nil {
			st.Wait(fmt.Sprintf("node %s is removed once the backup %s has its snapshot", n.Name, sp.Backup), time.Second)
			continue
		}
		if err := ms.Client.Delete(ctx, n, client.Preconditions{UID: &n.UID}); err != nil && !apierrors.IsNotFound(err) {
			return acted, fmt.Errorf("delete ValkeyNode %s: %w", n.Name, err)
		}
		shardSize[n.Spec.Shard]--
		ms.Event(st, n, corev1.EventTypeNormal, valkeyv1.EventScaledIn, "DeleteNode", "deleted ValkeyNode %s (no longer in spec, owns no slots)", n.Name)
		acted = true
	}
	if acted {
		st.Wait("removing nodes", time.Second)
	} else {
		st.Wait("draining nodes to remove", time.Second)
	}
	return acted, nil
}

// unwanted are the nodes the spec no longer wants that are not being deleted yet, by shard
// and replica index.
func unwanted(st *round.State) []*valkeyv1.ValkeyNode {
	var extra []*valkeyv1.ValkeyNode
	for _, n := range st.Nodes {
		if n.DeletionTimestamp.IsZero() && !round.Wanted(st.Cluster, n.Spec.Shard, n.Spec.ReplicaIndex) {
			extra = append(extra, n)
		}
	}
	return extra
}

// keptShards are the removed shards of the nodes in extra that keep all their nodes this
// round (see shardHolds); the round's progress says why.
func keptShards(st *round.State, extra []*valkeyv1.ValkeyNode) map[int32]bool {
	kept := map[int32]bool{}
	for _, n := range extra {
		shard := n.Spec.Shard
		if _, seen := kept[shard]; seen || shard < st.Cluster.Spec.Shards {
			continue
		}
		why := shardHolds(st, shard)
		kept[shard] = why != ""
		if why != "" {
			st.Wait(fmt.Sprintf("shard %d keeps its nodes until its slots have moved: %s", shard, why), time.Second)
		}
	}
	return kept
}

// shardHolds says why a removed shard may still hold the only copy of some slot's keys, ""
// when it holds none: a node of it owns slots (as its server says, or as the seed says of
// the ID its status last recorded), a primary reports a slot importing from or migrating
// to one of its nodes, or no node of the cluster answers to tell. Until then none of its
// nodes is deleted: a replica is a copy of its primary's keys, and with reclaimPolicy
// Delete its claim would go with it.
func shardHolds(st *round.State, shard int32) string {
	if st.Seed == nil {
		return "no node of the cluster answers to tell what it owns"
	}
	ids := map[string]string{}
	for _, n := range st.Nodes {
		if n.Spec.Shard != shard {
			continue
		}
		id, slots := ownedSlots(st, n)
		if slots > 0 {
			return fmt.Sprintf("%s (%s) owns %d slots", n.Name, round.ShortID(id), slots)
		}
		if id != "" {
			ids[id] = n.Name
		}
	}
	return movingWith(st, ids)
}

// ownedSlots is n's node ID (its server's, else the one its status last recorded) and the
// slots it owns as a primary: as its server says, or as the seed says of that ID, whichever
// is more (the seed learns of a move by gossip).
func ownedSlots(st *round.State, n *valkeyv1.ValkeyNode) (string, int) {
	id, slots := round.RecordedID(n), 0
	if m := st.Members[n.Name]; m.Reachable() {
		id = m.ID()
		if m.Self.Primary() {
			slots = m.Self.SlotCount()
		}
	}
	if v := st.View[id]; v != nil && v.Primary() {
		slots = max(slots, v.SlotCount())
	}
	return id, slots
}

// movingWith says which slot a primary reports importing or migrating to or from one of
// the nodes ids names (by node ID), or that one of those reports some; "" when none does.
func movingWith(st *round.State, ids map[string]string) string {
	for _, m := range st.SortedMembers() {
		if !m.Self.Primary() {
			continue
		}
		if name, ok := ids[m.ID()]; ok && len(m.Self.Migrating)+len(m.Self.Importing) > 0 {
			return fmt.Sprintf("%s has slots importing or migrating", name)
		}
		for _, peers := range []map[int]string{m.Self.Migrating, m.Self.Importing} {
			for _, slot := range slices.Sorted(maps.Keys(peers)) {
				if name, ok := ids[peers[slot]]; ok {
					return fmt.Sprintf("slot %d moves between %s and %s", slot, m.Node.Name, name)
				}
			}
		}
	}
	return ""
}

// liveShardSizes counts the nodes of each shard that are not being deleted.
func liveShardSizes(st *round.State) map[int32]int {
	out := map[int32]int{}
	for _, n := range st.Nodes {
		if n.DeletionTimestamp.IsZero() {
			out[n.Spec.Shard]++
		}
	}
	return out
}

// isReplica tells whether n is not a primary (or cannot be reached to tell).
func isReplica(st *round.State, n *valkeyv1.ValkeyNode) bool {
	m := st.Members[n.Name]
	return !m.Reachable() || !m.Self.Primary()
}

// carriedPoint is the saved point n carries for a backup (nil when none): its volume is
// being snapshotted, and the backup learns of the snapshot from n's status.
func carriedPoint(n *valkeyv1.ValkeyNode) *valkeyv1.SavedPoint {
	if n.Status.Topology == nil {
		return nil
	}
	return n.Status.Topology.SavedPoint
}

// deletable tells whether n may be removed: it owns no slots (as it says, or as the seed
// says of its last known ID) and no wanted node follows it.
func deletable(st *round.State, n *valkeyv1.ValkeyNode) bool {
	m := st.Members[n.Name]
	if !m.Reachable() {
		v := st.View[round.RecordedID(n)]
		return v == nil || v.SlotCount() == 0
	}
	if m.Self.SlotCount() > 0 {
		return false
	}
	for _, o := range st.SortedMembers() {
		if o.Self.PrimaryID == m.ID() && round.Wanted(st.Cluster, o.Node.Spec.Shard, o.Node.Spec.ReplicaIndex) {
			return false
		}
	}
	return true
}
