package topologycontroller

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"
)

// migrateSlot moves one slot from the primary at src to the primary at dst, key by key:
// SETSLOT IMPORTING on dst, SETSLOT MIGRATING on src, GETKEYSINSLOT + MIGRATE in batches,
// then SETSLOT NODE on dst, src and every other member. Every step can be repeated, so a
// migration interrupted at any point (the controller killed) is finished by running it
// again. This works on Redis 7 and every Valkey.
func (r *Reconciler) migrateSlot(ctx context.Context, st *clusterState, slot int, src, dst *member) error {
	s := strconv.Itoa(slot)
	// What the source said at the start of this round; this round moves each slot once.
	if ownsSlot(src.self, slot) {
		if err := st.cs.ok(ctx, dst.addr, "CLUSTER", "SETSLOT", s, "IMPORTING", src.id()); err != nil {
			return err
		}
		if err := st.cs.ok(ctx, src.addr, "CLUSTER", "SETSLOT", s, "MIGRATING", dst.id()); err != nil {
			return err
		}
		if err := r.moveKeys(ctx, st, slot, src, dst); err != nil {
			return err
		}
	}
	// The target first (it then owns the slot and serves it), then the source, then the rest.
	if err := st.cs.ok(ctx, dst.addr, "CLUSTER", "SETSLOT", s, "NODE", dst.id()); err != nil {
		return err
	}
	if err := st.cs.ok(ctx, src.addr, "CLUSTER", "SETSLOT", s, "NODE", dst.id()); err != nil {
		return err
	}
	for _, m := range st.sortedMembers() {
		if m == src || m == dst || !m.self.primary() || !st.inCluster(m) {
			continue
		}
		// Others learn it by gossip too; telling them speeds up redirections.
		_ = st.cs.ok(ctx, m.addr, "CLUSTER", "SETSLOT", s, "NODE", dst.id())
	}
	return nil
}

// moveKeys migrates every key of slot from src to dst in batches.
func (r *Reconciler) moveKeys(ctx context.Context, st *clusterState, slot int, src, dst *member) error {
	host, port, err := net.SplitHostPort(dst.addr)
	if err != nil {
		return err
	}
	batch := strconv.Itoa(r.Opts.MigrationBatchSize)
	timeout := strconv.Itoa(int(r.Opts.CommandTimeout / time.Millisecond))
	for {
		res, err := st.cs.do(ctx, src.addr, "CLUSTER", "GETKEYSINSLOT", strconv.Itoa(slot), batch)
		if err != nil {
			return err
		}
		keys, err := res.AsStrSlice()
		if err != nil {
			return fmt.Errorf("CLUSTER GETKEYSINSLOT %d on %s: %w", slot, src.addr, err)
		}
		if len(keys) == 0 {
			return nil
		}
		args := []string{"MIGRATE", host, port, "", "0", timeout, "REPLACE"}
		if st.cs.password != "" {
			args = append(args, "AUTH", st.cs.password)
		}
		args = append(args, "KEYS")
		args = append(args, keys...)
		if err := st.cs.ok(ctx, src.addr, args...); err != nil && !strings.Contains(err.Error(), "NOKEY") {
			return err
		}
	}
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

// openMigrations lists the slots some member reports as importing or migrating.
func openMigrations(st *clusterState) []openMigration {
	seen := map[int]bool{}
	var out []openMigration
	for _, m := range st.sortedMembers() {
		for slot, to := range m.self.Migrating {
			if !seen[slot] {
				seen[slot] = true
				out = append(out, openMigration{slot, m.id(), to})
			}
		}
	}
	for _, m := range st.sortedMembers() {
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
	for _, o := range open {
		src, dst := st.byID[o.from], st.byID[o.to]
		if src == nil || dst == nil {
			st.wait(fmt.Sprintf("slot %d is open between %s and %s, one of them unreachable", o.slot, short8(o.from), short8(o.to)), time.Second)
			st.migrating = true
			continue
		}
		if err := r.migrateSlot(ctx, st, o.slot, src, dst); err != nil {
			return true, fmt.Errorf("finish migration of slot %d: %w", o.slot, err)
		}
	}
	st.migrating = true
	st.wait(fmt.Sprintf("finished %d interrupted slot migrations", len(open)), short)
	return true, nil
}
