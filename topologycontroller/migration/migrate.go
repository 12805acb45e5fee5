package migration

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"valkey.io/operator/internal/clusternodes"
	"valkey.io/operator/topologycontroller/round"
)

// slotsPerBatch is how many slots move together: their SETSLOT and GETKEYSINSLOT commands
// are pipelined.
const slotsPerBatch = 64

// A MIGRATE carries at most MigrationBatchSize keys and migrateMaxBytes (as MEMORY USAGE
// counts them; a larger key goes alone), and a pipeline of MIGRATEs about as much: the
// source serves nobody while it runs one. Its timeout is migrateBaseTimeout plus the time
// its bytes take at migrateBytesPerSecond.
const (
	migrateMaxBytes       = 4 << 20
	migrateBaseTimeout    = 2 * time.Second
	migrateBytesPerSecond = 8 << 20
)

// migrateSlots moves slots from the primary src to the primary dst, key by key: SETSLOT
// IMPORTING on dst, SETSLOT MIGRATING on src, GETKEYSINSLOT + MIGRATE in batches, each
// deleted on src once a replica of dst has it (movebatch.go), then SETSLOT NODE on dst, src
// and every other primary. In a cluster with replicas it waits until dst has one. Every step can be repeated, so a
// migration interrupted at any point (the controller killed) is finished by running it
// again. This works on Redis 7 and every Valkey.
//
// A slot is given to dst only once neither src nor the slot's owner holds keys of it; a
// slot whose keys could not move stays open and backs off (see stallBook). It returns the
// number of slots given to dst.
func (mo *Mover) migrateSlots(ctx context.Context, st *Round, slots []int, src, dst *round.Member) (int, error) {
	if st.Cluster.Spec.Replicas > 0 && len(followersOf(st, dst)) == 0 {
		// Keys leave the source only once a replica of the target has them (movebatch.go).
		st.Wait(fmt.Sprintf("slots wait for a replica of %s to follow it before their keys move there (a replica starting or syncing; one that stays down says why in its WorkloadReady)", dst.Node.Name), time.Second)
		return 0, nil
	}
	slots = mo.readySlots(st, slots)
	var owned []int
	for _, slot := range slots {
		// What the source said at the start of this round; a round moves each slot once.
		if ownsSlot(src.Self, slot) {
			owned = append(owned, slot)
		}
	}
	failed := map[int]string{}
	if len(owned) > 0 {
		if _, err := st.Conns.Multi(ctx, dst.Addr, setslot(owned, "IMPORTING", src.ID())); err != nil {
			return 0, err
		}
		if _, err := st.Conns.Multi(ctx, src.Addr, setslot(owned, "MIGRATING", dst.ID())); err != nil {
			return 0, err
		}
		var err error
		if failed, err = mo.moveKeys(ctx, st, owned, src, dst); err != nil {
			return 0, err
		}
	}
	give, err := emptied(ctx, st, slots, src, dst, failed)
	if err != nil {
		return 0, err
	}
	mo.stallSlots(st, failed, src, dst)
	if len(give) == 0 {
		return 0, nil
	}
	// The target first (it then owns the slots and serves them), then the source, then the
	// other primaries (they would learn it by gossip; telling them speeds up redirections).
	if _, err := st.Conns.Multi(ctx, dst.Addr, setslot(give, "NODE", dst.ID())); err != nil {
		return 0, err
	}
	if _, err := st.Conns.Multi(ctx, src.Addr, setslot(give, "NODE", dst.ID())); err != nil {
		return 0, err
	}
	for _, m := range st.SortedMembers() {
		if m == src || m == dst || !m.Self.Primary() || !st.InCluster(m) {
			continue
		}
		_, _ = st.Conns.Multi(ctx, m.Addr, setslot(give, "NODE", dst.ID()))
	}
	mo.stalls.cleared(st.Cluster.UID, give)
	// Counted once: a slot the source no longer owned at the start of the round was given
	// (and counted) by an earlier one, and is planned again only because the seed's view
	// had not caught up.
	slotsMigrated.WithLabelValues(st.Cluster.Namespace, st.Cluster.Name).Add(float64(countIn(give, owned)))
	return len(give), nil
}

// countIn is how many of slots are in of.
func countIn(slots, of []int) int {
	in := make(map[int]bool, len(of))
	for _, s := range of {
		in[s] = true
	}
	n := 0
	for _, s := range slots {
		if in[s] {
			n++
		}
	}
	return n
}

// emptied are the slots that may be given to dst: not failed, and no key of them left on
// src nor on the slot's owner in the seed's view (the source's successor after a failover).
// The others are added to failed.
func emptied(ctx context.Context, st *Round, slots []int, src, dst *round.Member, failed map[int]string) ([]int, error) {
	ask := map[*round.Member][]int{}
	var order []*round.Member
	for _, slot := range slots {
		if failed[slot] != "" {
			continue
		}
		for _, m := range []*round.Member{src, st.ByID[viewOwner(st, slot)]} {
			if m == nil || m == dst || !m.Reachable() {
				continue
			}
			if _, ok := ask[m]; !ok {
				order = append(order, m)
			}
			ask[m] = append(ask[m], slot)
		}
	}
	for _, m := range order {
		counts, err := round.CountKeys(ctx, st.Conns, m.Addr, ask[m])
		if err != nil {
			return nil, err
		}
		for slot, n := range counts {
			if n > 0 && failed[slot] == "" {
				failed[slot] = fmt.Sprintf("%s still holds %d keys of it", m.Node.Name, n)
			}
		}
	}
	var give []int
	for _, slot := range slots {
		if failed[slot] == "" {
			give = append(give, slot)
		}
	}
	return give, nil
}

// viewOwner is the ID of the primary that owns slot in the seed's view ("" if none).
func viewOwner(st *Round, slot int) string {
	for id, n := range st.View {
		if n.Primary() && ownsSlot(n, slot) {
			return id
		}
	}
	return ""
}

func setslot(slots []int, args ...string) [][]string {
	out := make([][]string, 0, len(slots))
	for _, s := range slots {
		out = append(out, append([]string{"CLUSTER", "SETSLOT", strconv.Itoa(s)}, args...))
	}
	return out
}

// ownsSlot tells whether n owns slot.
func ownsSlot(n *clusternodes.Node, slot int) bool {
	for _, rg := range n.Slots {
		if slot >= rg.Start && slot <= rg.End {
			return true
		}
	}
	return false
}
