package topologycontroller

import (
	"sort"
)

// SlotMove moves slots from one primary to another. From is empty for slots nobody owns
// yet: they are added to To (CLUSTER ADDSLOTSRANGE) instead of migrated.
type SlotMove struct {
	From, To string
	Slots    []int
}

// EvenCounts is how many slots each of n primaries owns when 16384 slots are split evenly:
// the first 16384 % n get one more.
func EvenCounts(n int) []int {
	if n <= 0 {
		return nil
	}
	out := make([]int, n)
	for i := range out {
		out[i] = TotalSlots / n
		if i < TotalSlots%n {
			out[i]++
		}
	}
	return out
}

// PlanSlots plans the moves that split the 16384 slots evenly (within one slot of each
// other) across targets, the primaries that should own slots, in their order. owned maps
// every current owner (targets and others) to its slots. Owners that are not targets give
// away all their slots; targets above their share give away the surplus; unowned slots are
// assigned first. The plan moves as few slots as it can: the targets that own the most keep
// the one extra slot of an uneven split.
func PlanSlots(targets []string, owned map[string][]int) []SlotMove {
	if len(targets) == 0 {
		return nil
	}
	counts := EvenCounts(len(targets))
	// Give the larger shares to the targets that own the most already.
	order := make([]int, len(targets))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		return len(owned[targets[order[a]]]) > len(owned[targets[order[b]]])
	})
	want := map[string]int{}
	for rank, i := range order {
		want[targets[i]] = counts[rank]
	}

	type give struct {
		from  string
		slots []int
	}
	isTarget := map[string]bool{}
	for _, t := range targets {
		isTarget[t] = true
	}
	taken := make([]bool, TotalSlots)
	var owners []string
	for id, slots := range owned {
		owners = append(owners, id)
		for _, s := range slots {
			if s >= 0 && s < TotalSlots {
				taken[s] = true
			}
		}
	}
	sort.Strings(owners)

	// Pool of slots to hand out, in this order: unowned, owned by non-targets, surplus.
	var pool []give
	var free []int
	for s, t := range taken {
		if !t {
			free = append(free, s)
		}
	}
	if len(free) > 0 {
		pool = append(pool, give{"", free})
	}
	for _, id := range owners {
		if !isTarget[id] && len(owned[id]) > 0 {
			s := append([]int(nil), owned[id]...)
			sort.Ints(s)
			pool = append(pool, give{id, s})
		}
	}
	for _, id := range targets {
		if extra := len(owned[id]) - want[id]; extra > 0 {
			s := append([]int(nil), owned[id]...)
			sort.Ints(s)
			pool = append(pool, give{id, s[len(s)-extra:]})
		}
	}

	var moves []SlotMove
	for _, to := range targets {
		need := want[to] - len(owned[to])
		for need > 0 && len(pool) > 0 {
			g := &pool[0]
			n := min(need, len(g.slots))
			moves = appendMove(moves, g.from, to, g.slots[:n])
			g.slots = g.slots[n:]
			need -= n
			if len(g.slots) == 0 {
				pool = pool[1:]
			}
		}
	}
	return moves
}

func appendMove(moves []SlotMove, from, to string, slots []int) []SlotMove {
	for i := range moves {
		if moves[i].From == from && moves[i].To == to {
			moves[i].Slots = append(moves[i].Slots, slots...)
			return moves
		}
	}
	return append(moves, SlotMove{From: from, To: to, Slots: append([]int(nil), slots...)})
}
