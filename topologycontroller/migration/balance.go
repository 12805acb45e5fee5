package migration

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
	"valkey.io/operator/topologycontroller/planner"
	"valkey.io/operator/topologycontroller/round"
)

// slotTargets are the primaries that should own slots: the current primary of every wanted
// shard, unless its node is being deleted. missing are the wanted shards without a primary
// yet (their nodes are starting, or joining).
func slotTargets(st *Round) (targets []*round.Member, missing []string) {
	for shard := int32(0); shard < st.Cluster.Spec.Shards; shard++ {
		p := st.Primary[shard]
		if p == nil {
			missing = append(missing, strconv.Itoa(int(shard)))
			continue
		}
		if p.Deleting() {
			continue
		}
		targets = append(targets, p)
	}
	return targets, missing
}

// Balance assigns slots nobody owns and moves slots until the wanted shards' primaries
// own 16384/shards each (within one slot): to new primaries on scale-out, off removed
// shards on scale-in, off a node being deleted that has no replica to fail over to.
func (mo *Mover) Balance(ctx context.Context, st *Round) (bool, error) {
	if st.Seed == nil {
		return false, nil
	}
	targets, missing := slotTargets(st)
	if len(missing) > 0 || len(targets) == 0 {
		why := "waiting for every shard's primary to join"
		if len(missing) > 0 {
			why += ": none yet in shard " + strings.Join(missing, ", ")
		}
		st.Wait(why, time.Second)
		return false, nil
	}
	owned, orphan, ok := slotOwners(st)
	if !ok {
		st.Wait("waiting for slot owners to be reachable", time.Second)
		return false, nil
	}
	ids := make([]string, len(targets))
	for i, t := range targets {
		ids[i] = t.ID()
	}
	moves := planner.Slots(ids, owned)
	if down := unreachableNode(st); down != "" && assignsFree(moves, orphan) {
		// Slots nobody in this view owns may be owned in a view that cannot be seen: a
		// fresh node alone while its peers are down must not found a cluster of its own.
		st.Wait(fmt.Sprintf("waiting for %s to be reachable before assigning slots nobody owns", down), time.Second)
		return false, nil
	}
	if len(moves) == 0 {
		st.balanced = true
		if moved := mo.underway.balanced(st.Cluster.UID); moved || !migrationStarting(st) {
			mo.event(st, nil, corev1.EventTypeNormal, valkeyv1.EventMigrated, "MigrateSlots", "slots are balanced: %d primaries own %d slots each (within one)", len(targets), planner.TotalSlots/len(targets))
		}
		return false, nil
	}
	return mo.applyMoves(ctx, st, moves, owned, orphan)
}

// unreachableNode is the name of the first node of the cluster, not being deleted, whose
// server cannot be reached; "" when every one can.
func unreachableNode(st *Round) string {
	for _, n := range st.Nodes {
		if n.DeletionTimestamp == nil && !st.Members[n.Name].Reachable() {
			return n.Name
		}
	}
	return ""
}

// assignsFree tells whether moves hand out slots nobody owns (not those of a lost owner).
func assignsFree(moves []planner.Move, orphan map[int]string) bool {
	for _, mv := range moves {
		if mv.From != "" {
			continue
		}
		for _, slot := range mv.Slots {
			if orphan[slot] == "" {
				return true
			}
		}
	}
	return false
}

// slotOwners are the slots of each owner in the seed's view, and the slots of lost owners
// (see lostOwners), which are handed out like free ones. ok is false while some other
// owner is unreachable: slots of a node that is down cannot move.
func slotOwners(st *Round) (owned map[string][]int, orphan map[int]string, ok bool) {
	lost := lostOwners(st)
	owned, orphan = map[string][]int{}, map[int]string{}
	for id, n := range st.View {
		if !n.Primary() || n.SlotCount() == 0 {
			continue
		}
		if lost[id] {
			for _, slot := range planner.ExpandSlots(n.Slots) {
				orphan[slot] = id
			}
			continue
		}
		if st.ByID[id] == nil {
			return nil, nil, false
		}
		owned[id] = planner.ExpandSlots(n.Slots)
	}
	addSelfOwned(st, owned, orphan)
	return owned, orphan, true
}

// addSelfOwned adds to owned the slots that reachable primaries report as their own while
// the seed's view shows them without an owner: a server knows its own slots at once, the
// seed only after gossip. Without this, slots assigned one round ago would be assigned
// again, and refused as busy.
func addSelfOwned(st *Round, owned map[string][]int, orphan map[int]string) {
	taken := map[int]bool{}
	for _, slots := range owned {
		for _, slot := range slots {
			taken[slot] = true
		}
	}
	for _, m := range st.SortedMembers() { // in node order: the same owner every round
		if !m.Self.Primary() || m.Self.SlotCount() == 0 {
			continue
		}
		added := false
		for _, slot := range planner.ExpandSlots(m.Self.Slots) {
			if !taken[slot] && orphan[slot] == "" {
				owned[m.ID()] = append(owned[m.ID()], slot)
				taken[slot], added = true, true
			}
		}
		if added {
			slices.Sort(owned[m.ID()])
		}
	}
}

// applyMoves carries out the planned moves: slots without an owner are assigned, the others
// migrated. It acts unless every slot it would migrate is backing off (see stallBook):
// then the later phases go on (a roll may be what fixes the cause).
func (mo *Mover) applyMoves(ctx context.Context, st *Round, moves []planner.Move, owned map[string][]int, orphan map[int]string) (bool, error) {
	// A primary that is about to receive its first slots starts empty.
	for _, mv := range moves {
		if len(owned[mv.To]) == 0 {
			if ok, err := mo.Flush(ctx, st.State, st.ByID[mv.To]); err != nil || !ok {
				return true, err // not emptied: its keys may exist nowhere else (KeysNotElsewhere)
			}
		}
	}
	var migrations []planner.Move
	for _, mv := range moves {
		if mv.From != "" {
			migrations = append(migrations, mv)
			continue
		}
		if err := mo.assignSlots(ctx, st, mv, orphan); err != nil {
			return true, err
		}
	}
	// Slots are moving while any move is planned, even in a round that fails.
	st.migrating = len(migrations) > 0
	moved, atomic, err := mo.migrate(ctx, st, migrations)
	if moved > 0 || atomic > 0 {
		mo.underway.moved(st.Cluster.UID)
	}
	if atomic > 0 {
		st.Wait(fmt.Sprintf("migrating %d slots atomically", atomic), atomicPoll)
	}
	if moved > 0 {
		remaining := 0
		for _, mv := range migrations {
			remaining += len(mv.Slots)
		}
		// Go on at once: nothing in Kubernetes is awaited.
		st.Wait(fmt.Sprintf("migrating slots: %d of %d moved this round", moved, remaining), time.Millisecond)
	}
	if moved == 0 && atomic == 0 && len(migrations) == len(moves) && err == nil {
		st.migrating = false
		st.Wait("waiting to try again the slots whose keys could not move", time.Second)
		return false, nil
	}
	if moved == 0 && atomic == 0 {
		st.Wait("assigning slots", round.Short)
	}
	return true, err
}

// migrate carries out the moves between primaries, grouped by source: atomically where
// the servers can (see atomicMoves), else key by key up to MigrationSlotsPerReconcile
// slots per round. It returns the slots moved key by key and the slots in flight
// atomically.
func (mo *Mover) migrate(ctx context.Context, st *Round, moves []planner.Move) (moved, atomic int, err error) {
	var sources []string
	bySource := map[string][]planner.Move{}
	for _, mv := range moves {
		if _, ok := bySource[mv.From]; !ok {
			sources = append(sources, mv.From)
		}
		bySource[mv.From] = append(bySource[mv.From], mv)
	}
	for _, id := range sources {
		src := st.ByID[id]
		if mo.atomicMoves(st, src, bySource[id]) {
			n, err := mo.migrateAtomically(ctx, st, src, bySource[id])
			atomic += n
			if err != nil {
				return moved, atomic, err
			}
			continue
		}
		for _, mv := range bySource[id] {
			n, err := mo.migrateMove(ctx, st, mv, mo.Options.SlotsPerReconcile-moved)
			moved += n
			if err != nil {
				return moved, atomic, err
			}
		}
	}
	return moved, atomic, nil
}

// assignSlots gives a move's slots without an owner to its target: free slots by
// ADDSLOTSRANGE, slots of a lost owner by claimSlots.
func (mo *Mover) assignSlots(ctx context.Context, st *Round, mv planner.Move, orphan map[int]string) error {
	dst := st.ByID[mv.To]
	var free, claimed []int
	for _, slot := range mv.Slots {
		if orphan[slot] != "" {
			claimed = append(claimed, slot)
		} else {
			free = append(free, slot)
		}
	}
	if len(claimed) > 0 {
		if err := mo.claimSlots(ctx, st, claimed, dst); err != nil {
			return err
		}
		mo.event(st, dst.Node, corev1.EventTypeWarning, valkeyv1.EventSlotsReassigned, "ClusterSetSlot", "%d slots of a lost node (no replica, no ValkeyNode reports its ID) given to %s: their keys are lost", len(claimed), dst.Node.Name)
	}
	if len(free) == 0 {
		return nil
	}
	args := []string{"CLUSTER", "ADDSLOTSRANGE"}
	for _, rg := range planner.CompactSlots(free) {
		args = append(args, strconv.Itoa(rg.Start), strconv.Itoa(rg.End))
	}
	if err := st.Conns.OK(ctx, dst.Addr, args...); err != nil {
		return err
	}
	announce(ctx, st, dst)
	mo.event(st, dst.Node, corev1.EventTypeNormal, valkeyv1.EventSlotsAssigned, "ClusterAddSlots", "assigned %d slots to %s", len(free), dst.Node.Name)
	return nil
}

// announce has dst meet every other member it already knows, so that the slots it was
// just given reach them with the first packet of each new link (within the next cluster
// cron tick) instead of with gossip (a node pings each peer at least every half node
// timeout: 2.5 s at the default): a formed cluster reports cluster_state ok that much sooner.
// It is best effort: a MEET that fails leaves the slots to gossip.
func announce(ctx context.Context, st *Round, dst *round.Member) {
	for _, m := range st.SortedMembers() {
		if m != dst && m.Reachable() && !m.Deleting() && dst.Sees(m) {
			_ = st.Conns.Meet(ctx, dst.Addr, m.Addr)
		}
	}
}

// migrateMove migrates up to budget of a move's slots key by key, slotsPerBatch at a time,
// and returns how many it moved.
func (mo *Mover) migrateMove(ctx context.Context, st *Round, mv planner.Move, budget int) (int, error) {
	src, dst := st.ByID[mv.From], st.ByID[mv.To]
	if migrationStarting(st) && budget > 0 {
		// Once per migration (the cluster's Progressing says whether one is under way),
		// not once per round.
		mo.event(st, dst.Node, corev1.EventTypeNormal, valkeyv1.EventMigrating, "MigrateSlots", "moving %d slots from %s to %s", len(mv.Slots), src.Node.Name, dst.Node.Name)
	}
	// Slots whose keys could not move wait for their next try (see stallBook) and take
	// nothing of the budget.
	slots := mo.readySlots(st, mv.Slots)
	moved := 0
	for start := 0; start < len(slots) && moved < budget; start += slotsPerBatch {
		batch := slots[start:min(len(slots), start+slotsPerBatch, start+budget-moved)]
		n, err := mo.migrateSlots(ctx, st, batch, src, dst)
		moved += n
		if err != nil {
			return moved, fmt.Errorf("migrate %d slots from %s to %s: %w", len(batch), src.Node.Name, dst.Node.Name, err)
		}
	}
	return moved, nil
}

// migrationStarting tells whether the ValkeyCluster's status does not report a migration
// under way yet.
func migrationStarting(st *Round) bool {
	c := status.Get(st.Cluster.Status.Conditions, valkeyv1.ConditionProgressing)
	return c == nil || c.Status != metav1.ConditionTrue ||
		(c.Reason != valkeyv1.ReasonMigratingSlots && c.Reason != valkeyv1.ReasonMigrationStalled)
}

// lostOwners are the slot owners of the seed's view that are gone for good: no ValkeyNode
// stands for their ID any more (the node came back with an empty /data and a new ID), they
// are failed, and no live replica follows them (Valkey would promote it). Their keys are
// lost; their slots are given to the primaries that need slots.
func lostOwners(st *Round) map[string]bool {
	reported := st.ReportedIDs()
	liveFollower := liveFollowers(st)
	out := map[string]bool{}
	for id, n := range st.View {
		if n.Primary() && n.SlotCount() > 0 && n.Failed() && !reported[id] && st.ByID[id] == nil && !liveFollower[id] {
			out[id] = true
		}
	}
	return out
}

// liveFollowers are the IDs some replica in the seed's view follows and that replica is
// not failed.
func liveFollowers(st *Round) map[string]bool {
	out := map[string]bool{}
	for _, n := range st.View {
		if n.PrimaryID != "" && !n.Failed() && !n.Flags["fail?"] {
			out[n.PrimaryID] = true
		}
	}
	return out
}

// claimSlots gives slots owned by a lost node to dst: dst bumps its config epoch so that
// its claim wins over the lost owner's, then every member is told the new owner.
func (mo *Mover) claimSlots(ctx context.Context, st *Round, slots []int, dst *round.Member) error {
	if err := st.Conns.OK(ctx, dst.Addr, "CLUSTER", "BUMPEPOCH"); err != nil {
		return err
	}
	if _, err := st.Conns.Multi(ctx, dst.Addr, setslot(slots, "NODE", dst.ID())); err != nil {
		return err
	}
	for _, m := range st.SortedMembers() {
		if m == dst || !st.InCluster(m) {
			continue
		}
		if _, err := st.Conns.Multi(ctx, m.Addr, setslot(slots, "NODE", dst.ID())); err != nil {
			return err
		}
	}
	return nil
}
