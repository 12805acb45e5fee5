package topologycontroller

import (
	"context"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// slotTargets are the primaries that should own slots: the current primary of every wanted
// shard, unless its node is being deleted. ready is false while a wanted shard has no
// primary yet (its nodes are starting).
func slotTargets(st *clusterState) (targets []*member, ready bool) {
	ready = true
	for shard := int32(0); shard < st.cluster.Spec.Shards; shard++ {
		p := st.primary[shard]
		if p == nil {
			ready = false
			continue
		}
		if p.deleting() {
			continue
		}
		targets = append(targets, p)
	}
	return targets, ready
}

// balanceSlots assigns slots nobody owns and moves slots until the wanted shards' primaries
// own 16384/shards each (within one slot): to new primaries on scale-out, off removed
// shards on scale-in, off a node being deleted that has no replica to fail over to.
func (r *Reconciler) balanceSlots(ctx context.Context, st *clusterState) (bool, error) {
	if st.seed == nil {
		return false, nil
	}
	targets, ready := slotTargets(st)
	if !ready || len(targets) == 0 {
		st.wait("waiting for every shard's primary to join", time.Second)
		return false, nil
	}
	// Every slot owner must be reachable: slots of a node that is down cannot move. The
	// exception is a lost owner (see lostOwners): its slots are handed out like free ones.
	lost := lostOwners(st)
	owned := map[string][]int{}
	orphan := map[int]string{}
	for id, n := range st.view {
		if !n.primary() || n.slotCount() == 0 {
			continue
		}
		if lost[id] {
			for _, slot := range expandSlots(n.Slots) {
				orphan[slot] = id
			}
			continue
		}
		if st.byID[id] == nil {
			st.wait("waiting for slot owners to be reachable", time.Second)
			return false, nil
		}
		owned[id] = expandSlots(n.Slots)
	}
	ids := make([]string, len(targets))
	for i, t := range targets {
		ids[i] = t.id()
	}
	moves := PlanSlots(ids, owned)
	if len(moves) == 0 {
		if !migrationStarting(st) {
			r.event(st, nil, corev1.EventTypeNormal, "Migrated", "MigrateSlots", "slots are balanced: %d primaries own %d slots each (within one)", len(targets), TotalSlots/len(targets))
		}
		return false, nil
	}
	// A primary that is about to receive its first slots starts empty.
	for _, mv := range moves {
		dst := st.byID[mv.To]
		if len(owned[mv.To]) == 0 {
			if err := flushIfKeys(ctx, st.cs, dst.addr); err != nil {
				return true, err
			}
		}
	}
	budget := r.Opts.MigrationSlotsPerReconcile
	moved := 0
	for _, mv := range moves {
		dst := st.byID[mv.To]
		if mv.From == "" {
			var free, claimed []int
			for _, slot := range mv.Slots {
				if orphan[slot] != "" {
					claimed = append(claimed, slot)
				} else {
					free = append(free, slot)
				}
			}
			if len(claimed) > 0 {
				if err := r.claimSlots(ctx, st, claimed, dst); err != nil {
					return true, err
				}
				r.event(st, dst.node, corev1.EventTypeWarning, "SlotsReassigned", "ClusterSetSlot", "%d slots of a lost node (no replica, no ValkeyNode reports its ID) given to %s: their keys are lost", len(claimed), dst.node.Name)
			}
			if len(free) == 0 {
				continue
			}
			args := []string{"CLUSTER", "ADDSLOTSRANGE"}
			for _, rg := range compactSlots(free) {
				args = append(args, strconv.Itoa(rg.Start), strconv.Itoa(rg.End))
			}
			if err := st.cs.ok(ctx, dst.addr, args...); err != nil {
				return true, err
			}
			r.event(st, dst.node, corev1.EventTypeNormal, "SlotsAssigned", "ClusterAddSlots", "assigned %d slots to %s", len(free), dst.node.Name)
			continue
		}
		src := st.byID[mv.From]
		if migrationStarting(st) {
			// Once per migration (the cluster's Progressing says whether one is under way),
			// not once per round.
			r.event(st, dst.node, corev1.EventTypeNormal, "Migrating", "MigrateSlots", "moving %d slots from %s to %s", len(mv.Slots), src.node.Name, dst.node.Name)
		}
		for start := 0; start < len(mv.Slots) && moved < budget; start += slotsPerBatch {
			batch := mv.Slots[start:min(len(mv.Slots), start+slotsPerBatch, start+budget-moved)]
			if err := r.migrateSlots(ctx, st, batch, src, dst); err != nil {
				return true, fmt.Errorf("migrate %d slots from %s to %s: %w", len(batch), src.node.Name, dst.node.Name, err)
			}
			moved += len(batch)
		}
	}
	if moved > 0 {
		st.migrating = true
		remaining := 0
		for _, mv := range moves {
			if mv.From != "" {
				remaining += len(mv.Slots)
			}
		}
		// Go on at once: nothing in Kubernetes is awaited.
		st.wait(fmt.Sprintf("migrating slots: %d of %d moved this round", moved, remaining), time.Millisecond)
	} else {
		st.wait("assigning slots", time.Second)
	}
	return true, nil
}

// scaleIn deletes the ValkeyNodes that are no longer wanted once they own no slots:
// removed shards (replicas before primaries) and extra replicas (highest index first; a
// node that is its shard's primary is failed over to a remaining node first).
func (r *Reconciler) scaleIn(ctx context.Context, st *clusterState) (bool, error) {
	var extra []*valkeyv1.ValkeyNode
	for _, n := range st.nodes {
		if n.DeletionTimestamp.IsZero() && !wanted(st.cluster, n.Spec.Shard, n.Spec.ReplicaIndex) {
			extra = append(extra, n)
		}
	}
	if len(extra) == 0 {
		return false, nil
	}
	// Never remove a node that owns slots or that a wanted node still follows.
	deletable := func(n *valkeyv1.ValkeyNode) bool {
		m := st.members[n.Name]
		if !m.reachable() {
			id := ""
			if n.Status.Topology != nil {
				id = n.Status.Topology.NodeID
			}
			if v := st.view[id]; v != nil && v.slotCount() > 0 {
				return false
			}
			return true
		}
		if m.self.slotCount() > 0 {
			return false
		}
		for _, o := range st.sortedMembers() {
			if o.self.PrimaryID == m.id() && wanted(st.cluster, o.node.Spec.Shard, o.node.Spec.ReplicaIndex) {
				return false
			}
		}
		return true
	}
	isReplica := func(n *valkeyv1.ValkeyNode) bool {
		m := st.members[n.Name]
		return !m.reachable() || !m.self.primary()
	}
	shardCount := map[int32]int{}
	for _, n := range st.nodes {
		if n.DeletionTimestamp.IsZero() {
			shardCount[n.Spec.Shard]++
		}
	}
	acted := false
	// Replicas first, highest replica index first.
	for i := len(extra) - 1; i >= 0; i-- {
		n := extra[i]
		removedShard := n.Spec.Shard >= st.cluster.Spec.Shards
		if m := st.members[n.Name]; m.reachable() && m.self.primary() && m.self.slotCount() > 0 {
			if removedShard {
				continue // balanceSlots moves its slots away first
			}
			// An extra replica index that is its shard's primary now: fail over first.
			if len(syncedReplicas(st, m)) == 0 {
				continue
			}
			if err := r.failover(ctx, st, m, "scale-in of replicas"); err != nil {
				return true, err
			}
			return true, nil
		}
		if removedShard && !isReplica(n) && shardCount[n.Spec.Shard] > 1 {
			continue // the shard's replicas go first
		}
		if !deletable(n) {
			continue
		}
		if err := r.Client.Delete(ctx, n, client.Preconditions{UID: &n.UID}); err != nil && !isNotFound(err) {
			return acted, fmt.Errorf("delete ValkeyNode %s: %w", n.Name, err)
		}
		shardCount[n.Spec.Shard]--
		r.event(st, n, corev1.EventTypeNormal, "ScaledIn", "DeleteNode", "deleted ValkeyNode %s (no longer in spec, owns no slots)", n.Name)
		acted = true
	}
	if acted {
		st.wait("removing nodes", time.Second)
	} else {
		st.wait("draining nodes to remove", time.Second)
	}
	return acted, nil
}

// migrationStarting tells whether the ValkeyCluster's status does not report a migration
// under way yet.
func migrationStarting(st *clusterState) bool {
	c := status.Get(st.cluster.Status.Conditions, valkeyv1.ConditionProgressing)
	return c == nil || c.Status != metav1.ConditionTrue || c.Reason != ReasonMigrating
}

// lostOwners are the slot owners of the seed's view that are gone for good: no ValkeyNode
// stands for their ID any more (the node came back with an empty /data and a new ID), they
// are failed, and no live replica follows them (Valkey would promote it). Their keys are
// lost; their slots are given to the primaries that need slots.
func lostOwners(st *clusterState) map[string]bool {
	reported := st.reportedIDs()
	liveFollower := map[string]bool{}
	for _, n := range st.view {
		if n.PrimaryID != "" && !n.failed() && !n.Flags["fail?"] {
			liveFollower[n.PrimaryID] = true
		}
	}
	out := map[string]bool{}
	for id, n := range st.view {
		if n.primary() && n.slotCount() > 0 && n.failed() && !reported[id] && st.byID[id] == nil && !liveFollower[id] {
			out[id] = true
		}
	}
	return out
}

// claimSlots gives slots owned by a lost node to dst: dst bumps its config epoch so that
// its claim wins over the lost owner's, then every member is told the new owner.
func (r *Reconciler) claimSlots(ctx context.Context, st *clusterState, slots []int, dst *member) error {
	if err := st.cs.ok(ctx, dst.addr, "CLUSTER", "BUMPEPOCH"); err != nil {
		return err
	}
	if _, err := st.cs.multi(ctx, dst.addr, setslot(slots, "NODE", dst.id())); err != nil {
		return err
	}
	for _, m := range st.sortedMembers() {
		if m == dst || !st.inCluster(m) {
			continue
		}
		if _, err := st.cs.multi(ctx, m.addr, setslot(slots, "NODE", dst.id())); err != nil {
			return err
		}
	}
	return nil
}
