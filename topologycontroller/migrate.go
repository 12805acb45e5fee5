package topologycontroller

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// slotsPerBatch is how many slots move together: their SETSLOT and GETKEYSINSLOT commands
// are pipelined.
const slotsPerBatch = 64

// migrateSlots moves slots from the primary src to the primary dst, key by key: SETSLOT
// IMPORTING on dst, SETSLOT MIGRATING on src, GETKEYSINSLOT + MIGRATE in batches, then
// SETSLOT NODE on dst, src and every other primary. Every step can be repeated, so a
// migration interrupted at any point (the controller killed) is finished by running it
// again. This works on Redis 7 and every Valkey.
func (r *Reconciler) migrateSlots(ctx context.Context, st *clusterState, slots []int, src, dst *member) error {
	var owned []int
	for _, slot := range slots {
		// What the source said at the start of this round; a round moves each slot once.
		if ownsSlot(src.self, slot) {
			owned = append(owned, slot)
		}
	}
	if len(owned) > 0 {
		if _, err := st.cs.multi(ctx, dst.addr, setslot(owned, "IMPORTING", src.id())); err != nil {
			return err
		}
		if _, err := st.cs.multi(ctx, src.addr, setslot(owned, "MIGRATING", dst.id())); err != nil {
			return err
		}
		if err := r.moveKeys(ctx, st, owned, src, dst); err != nil {
			return err
		}
	}
	// The target first (it then owns the slots and serves them), then the source, then the
	// other primaries (they would learn it by gossip; telling them speeds up redirections).
	if _, err := st.cs.multi(ctx, dst.addr, setslot(slots, "NODE", dst.id())); err != nil {
		return err
	}
	if _, err := st.cs.multi(ctx, src.addr, setslot(slots, "NODE", dst.id())); err != nil {
		return err
	}
	for _, m := range st.sortedMembers() {
		if m == src || m == dst || !m.self.primary() || !st.inCluster(m) {
			continue
		}
		_, _ = st.cs.multi(ctx, m.addr, setslot(slots, "NODE", dst.id()))
	}
	return nil
}

func setslot(slots []int, args ...string) [][]string {
	out := make([][]string, 0, len(slots))
	for _, s := range slots {
		out = append(out, append([]string{"CLUSTER", "SETSLOT", strconv.Itoa(s)}, args...))
	}
	return out
}

// moveKeys migrates every key of the slots from src to dst, MigrationBatchSize keys per
// MIGRATE, until GETKEYSINSLOT finds none left.
func (r *Reconciler) moveKeys(ctx context.Context, st *clusterState, slots []int, src, dst *member) error {
	host, port, err := net.SplitHostPort(dst.addr)
	if err != nil {
		return err
	}
	batch := strconv.Itoa(r.Options.MigrationBatchSize)
	timeout := strconv.Itoa(int(r.Options.CommandTimeout / time.Millisecond))
	pending := slots
	for len(pending) > 0 {
		cmds := make([][]string, 0, len(pending))
		for _, s := range pending {
			cmds = append(cmds, []string{"CLUSTER", "GETKEYSINSLOT", strconv.Itoa(s), batch})
		}
		res, err := st.cs.multi(ctx, src.addr, cmds)
		if err != nil {
			return err
		}
		// MIGRATE takes keys of one slot only (CROSSSLOT otherwise): one per slot, pipelined.
		var migrates [][]string
		var next []int
		for i, r := range res {
			keys, err := r.AsStrSlice()
			if err != nil {
				return fmt.Errorf("CLUSTER GETKEYSINSLOT %d on %s: %w", pending[i], src.addr, err)
			}
			if len(keys) == 0 {
				continue
			}
			next = append(next, pending[i])
			args := []string{"MIGRATE", host, port, "", "0", timeout, "REPLACE"}
			if st.cs.password != "" {
				args = append(args, "AUTH", st.cs.password)
			}
			args = append(args, "KEYS")
			migrates = append(migrates, append(args, keys...))
		}
		if _, err := st.cs.multi(ctx, src.addr, migrates); err != nil {
			return err
		}
		pending = next
	}
	return nil
}

// ownsSlot tells whether n owns slot.
func ownsSlot(n *clusterNode, slot int) bool {
	for _, rg := range n.Slots {
		if slot >= rg.Start && slot <= rg.End {
			return true
		}
	}
	return false
}

// openMigration is a slot left importing or migrating (a migration that was interrupted).
type openMigration struct {
	slot     int
	from, to string
}

// openMigrations lists the slots some primary reports as importing or migrating. Replicas
// do not count: Valkey 8+ copies these states to a primary's replicas (which refuse SETSLOT)
// and can leave a copy there after the slots have moved or the replica took over.
func openMigrations(st *clusterState) []openMigration {
	seen := map[int]bool{}
	var out []openMigration
	var primaries []*member
	for _, m := range st.sortedMembers() {
		if m.self.primary() {
			primaries = append(primaries, m)
		}
	}
	for _, m := range primaries {
		for slot, to := range m.self.Migrating {
			if !seen[slot] {
				seen[slot] = true
				out = append(out, openMigration{slot, m.id(), to})
			}
		}
	}
	for _, m := range primaries {
		for slot, from := range m.self.Importing {
			if !seen[slot] {
				seen[slot] = true
				out = append(out, openMigration{slot, from, m.id()})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].slot < out[j].slot })
	return out
}

// resumeMigrations finishes the slot migrations an earlier run left open, before anything
// else moves: the keys of such a slot are split between two nodes until it is done.
func (r *Reconciler) resumeMigrations(ctx context.Context, st *clusterState) (bool, error) {
	open := openMigrations(st)
	if len(open) == 0 {
		return false, nil
	}
	type pair struct{ from, to string }
	groups := map[pair][]int{}
	var order []pair
	for _, o := range open {
		p := pair{o.from, o.to}
		if _, ok := groups[p]; !ok {
			order = append(order, p)
		}
		groups[p] = append(groups[p], o.slot)
	}
	for _, p := range order {
		src, dst := sourceNow(st, p.from), st.byID[p.to]
		if src == nil || dst == nil {
			st.wait(fmt.Sprintf("slots %v are open between %s and %s, one of them unreachable", groups[p], short8(p.from), short8(p.to)), time.Second)
			st.migrating = true
			continue
		}
		if err := r.migrateSlots(ctx, st, groups[p], src, dst); err != nil {
			return true, fmt.Errorf("finish migration of slots %v: %w", groups[p], err)
		}
		r.event(st, dst.node, corev1.EventTypeNormal, valkeyv1.EventMigrating, "MigrateSlots", "finished %d interrupted slot migrations from %s to %s", len(groups[p]), src.node.Name, dst.node.Name)
	}
	st.migrating = true
	st.wait(fmt.Sprintf("finished %d interrupted slot migrations", len(open)), short)
	return true, nil
}

// sourceNow is the member that serves a slot an interrupted migration took from the node
// id: that node, or the primary it follows since a failover. Valkey 8 and later point the
// target's IMPORTING state at the new primary by themselves; Redis 7 leaves the old ID.
func sourceNow(st *clusterState, id string) *member {
	m := st.byID[id]
	if m != nil && !m.self.primary() && m.self.PrimaryID != "" {
		return st.byID[m.self.PrimaryID]
	}
	return m
}
