package migration

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/topologycontroller/round"
)

// openMigration is a slot left importing or migrating (a migration that was interrupted),
// as the primary reporter says.
type openMigration struct {
	slot     int
	from, to string
	reporter *round.Member
}

// openMigrations lists the slots some primary reports as importing or migrating. Replicas
// do not count: Valkey 8+ copies these states to a primary's replicas (which refuse SETSLOT)
// and can leave a copy there after the slots have moved or the replica took over.
func openMigrations(st *Round) []openMigration {
	seen := map[int]bool{}
	var out []openMigration
	var primaries []*round.Member
	for _, m := range st.SortedMembers() {
		if m.Self.Primary() {
			primaries = append(primaries, m)
		}
	}
	for _, m := range primaries {
		for slot, to := range m.Self.Migrating {
			if !seen[slot] {
				seen[slot] = true
				out = append(out, openMigration{slot, m.ID(), to, m})
			}
		}
	}
	for _, m := range primaries {
		for slot, from := range m.Self.Importing {
			if !seen[slot] {
				seen[slot] = true
				out = append(out, openMigration{slot, from, m.ID(), m})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].slot < out[j].slot })
	return out
}

// resumePlan is what Resume does with the open slots: finish them by source and
// target, settle those whose peer is gone, wait for the others.
type resumePlan struct {
	order   [][2]*round.Member
	groups  map[[2]*round.Member][]int
	settle  []openMigration
	waiting []string
}

// Resume finishes the slot migrations an earlier run left open, before anything
// else moves: the keys of such a slot are split between two nodes until it is done. A slot
// whose peer is gone for good is settled on the node that reports it (see settle). It acts
// (and ends the round) only when it changed something: a slot waiting for an unreachable
// peer, or backing off, never holds up the later phases.
func (mo *Mover) Resume(ctx context.Context, st *Round) (bool, error) {
	open := openMigrations(st)
	if len(open) == 0 {
		return false, nil
	}
	plan := mo.planResume(st, open)
	acted := false
	for _, p := range plan.order {
		src, dst := p[0], p[1]
		n, err := mo.migrateSlots(ctx, st, plan.groups[p], src, dst)
		if err != nil {
			return true, fmt.Errorf("finish migration of slots %v: %w", plan.groups[p], err)
		}
		if n > 0 {
			acted = true
			mo.event(st, dst.Node, corev1.EventTypeNormal, valkeyv1.EventMigrating, "MigrateSlots", "finished %d interrupted slot migrations from %s to %s", n, src.Node.Name, dst.Node.Name)
		}
	}
	for _, o := range plan.settle {
		did, err := mo.settle(ctx, st, o)
		if err != nil {
			return true, fmt.Errorf("settle open slot %d: %w", o.slot, err)
		}
		acted = acted || did
	}
	for _, w := range plan.waiting {
		st.Wait(w, time.Second)
	}
	if acted {
		st.migrating = true
		st.Wait(fmt.Sprintf("finishing %d interrupted slot migrations", len(open)), round.Short)
	}
	return acted, nil
}

// planResume decides, for each open slot, the source (the reachable primary that owns it,
// else the node the migration came from or the primary that node follows now) and the
// target (the node it went to, or the primary that one follows now).
func (mo *Mover) planResume(st *Round, open []openMigration) resumePlan {
	plan := resumePlan{groups: map[[2]*round.Member][]int{}}
	now := time.Now()
	for _, o := range open {
		if mo.stalls.waiting(st.Cluster.UID, o.slot, now) {
			continue
		}
		dst := successor(st, o.to)
		src := st.ByID[viewOwner(st, o.slot)]
		if src == nil || src == dst || !src.Self.Primary() {
			src = successor(st, o.from)
		}
		switch {
		case src != nil && dst != nil && src != dst:
			p := [2]*round.Member{src, dst}
			if _, ok := plan.groups[p]; !ok {
				plan.order = append(plan.order, p)
			}
			plan.groups[p] = append(plan.groups[p], o.slot)
		case (src == nil && goneID(st, o.from)) || (dst == nil && goneID(st, o.to)) || (src == dst && src != nil):
			plan.settle = append(plan.settle, o)
		default:
			plan.waiting = append(plan.waiting, fmt.Sprintf("slot %d is open between %s and %s, one of them unreachable", o.slot, round.ShortID(o.from), round.ShortID(o.to)))
		}
	}
	return plan
}

// successor is the member that stands for the node id in a migration: that node, or the
// primary it follows since a failover. Valkey 8 and later point the IMPORTING state at
// the new primary by themselves; Redis 7 leaves the old ID.
func successor(st *Round, id string) *round.Member {
	m := st.ByID[id]
	if m != nil && !m.Self.Primary() && m.Self.PrimaryID != "" {
		return st.ByID[m.Self.PrimaryID]
	}
	return m
}

// goneID tells whether the node id is gone for good: unreachable, no ValkeyNode stands for
// it, and no live replica follows it (Valkey would promote it).
func goneID(st *Round, id string) bool {
	return st.ByID[id] == nil && !st.ReportedIDs()[id] && !liveFollowers(st)[id]
}

// settle closes a slot left open toward (or from) a node that is gone, on the primary that
// reports it: SETSLOT STABLE, and when that primary holds the only keys of a slot it does
// not own, the slot is given to it. While another primary holds keys of the slot (the
// successor of a failed-over source, not yet the owner in the seed's view), it waits: the
// next rounds finish the migration from there.
func (mo *Mover) settle(ctx context.Context, st *Round, o openMigration) (bool, error) {
	rep := o.reporter
	if holder, n, err := otherHolder(ctx, st, o.slot, rep); err != nil || holder != nil {
		if holder != nil {
			st.Wait(fmt.Sprintf("slot %d is open on %s toward a node that is gone and %s holds %d keys of it", o.slot, rep.Node.Name, holder.Node.Name, n), time.Second)
		}
		return false, err
	}
	counts, err := round.CountKeys(ctx, st.Conns, rep.Addr, []int{o.slot})
	if err != nil {
		return false, err
	}
	slot := strconv.Itoa(o.slot)
	if err := st.Conns.OK(ctx, rep.Addr, "CLUSTER", "SETSLOT", slot, "STABLE"); err != nil {
		return false, err
	}
	if ownsSlot(rep.Self, o.slot) || viewOwner(st, o.slot) == rep.ID() || counts[o.slot] == 0 {
		mo.event(st, rep.Node, corev1.EventTypeWarning, valkeyv1.EventMigrationSettled, "ClusterSetSlot",
			"slot %d was left open between %s and %s, which is gone: made stable on %s", o.slot, round.ShortID(o.from), round.ShortID(o.to), rep.Node.Name)
		return true, nil
	}
	if err := giveSlot(ctx, st, o.slot, rep); err != nil {
		return false, err
	}
	mo.event(st, rep.Node, corev1.EventTypeWarning, valkeyv1.EventMigrationSettled, "ClusterSetSlot",
		"slot %d was left open between %s and %s, which is gone: given to %s, which holds its %d keys", o.slot, round.ShortID(o.from), round.ShortID(o.to), rep.Node.Name, counts[o.slot])
	return true, nil
}

// otherHolder is a reachable primary other than m that holds keys of slot, with their
// number.
func otherHolder(ctx context.Context, st *Round, slot int, m *round.Member) (*round.Member, int64, error) {
	for _, o := range st.SortedMembers() {
		if o == m || !o.Self.Primary() || !st.InCluster(o) {
			continue
		}
		counts, err := round.CountKeys(ctx, st.Conns, o.Addr, []int{slot})
		if err != nil {
			return nil, 0, err
		}
		if counts[slot] > 0 {
			return o, counts[slot], nil
		}
	}
	return nil, 0, nil
}

// giveSlot makes m the owner of slot: m bumps its config epoch so that its claim wins over
// the gone owner's, takes the slot, and the other primaries are told.
func giveSlot(ctx context.Context, st *Round, slot int, m *round.Member) error {
	if err := st.Conns.OK(ctx, m.Addr, "CLUSTER", "BUMPEPOCH"); err != nil {
		return err
	}
	if _, err := st.Conns.Multi(ctx, m.Addr, setslot([]int{slot}, "NODE", m.ID())); err != nil {
		return err
	}
	for _, o := range st.SortedMembers() {
		if o != m && o.Self.Primary() && st.InCluster(o) {
			_, _ = st.Conns.Multi(ctx, o.Addr, setslot([]int{slot}, "NODE", m.ID()))
		}
	}
	return nil
}
