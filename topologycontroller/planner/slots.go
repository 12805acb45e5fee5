package planner

import "sort"

// TotalSlots is the number of hash slots of a Valkey cluster.
const TotalSlots = 16384

// Move moves slots from one primary to another. From is empty for slots nobody owns
// yet: they are added to To (CLUSTER ADDSLOTSRANGE) instead of migrated.
type Move struct {
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

// Slots plans the moves that split the 16384 slots evenly (within one slot of each
// other) across targets, the primaries that should own slots, in their order. owned maps
// every current owner (targets and others) to its slots. Owners that are not targets give
// away all their slots; targets above their share give away the surplus; unowned slots are
// assigned first. The plan moves as few slots as it can: the targets that own the most keep
// the one extra slot of an uneven split.
func Slots(targets []string, owned map[string][]int) []Move {
	if len(targets) == 0 {
		return nil
	}
	want := shares(targets, owned)
	pool := slotPool(targets, owned, want)
	var moves []Move
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

// shares is the number of slots each target should own: the even split, the larger shares
// to the targets that own the most already.
func shares(targets []string, owned map[string][]int) map[string]int {
	counts := EvenCounts(len(targets))
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
	return want
}

// give is slots some owner ("" for none) hands out.
type give struct {
	from  string
	slots []int
}

// slotPool is the slots to hand out, in this order: unowned, owned by non-targets (by
// owner ID), the targets' surplus over their share (their highest slots).
func slotPool(targets []string, owned map[string][]int, want map[string]int) []give {
	var pool []give
	if free := unowned(owned); len(free) > 0 {
		pool = append(pool, give{"", free})
	}
	isTarget := map[string]bool{}
	for _, t := range targets {
		isTarget[t] = true
	}
	owners := make([]string, 0, len(owned))
	for id := range owned {
		owners = append(owners, id)
	}
	sort.Strings(owners)
	for _, id := range owners {
		if !isTarget[id] && len(owned[id]) > 0 {
			pool = append(pool, give{id, sortedCopy(owned[id])})
		}
	}
	for _, id := range targets {
		if extra := len(owned[id]) - want[id]; extra > 0 {
			s := sortedCopy(owned[id])
			pool = append(pool, give{id, s[len(s)-extra:]})
		}
	}
	return pool
}

// unowned lists the slots no owner has.
func unowned(owned map[string][]int) []int {
	taken := make([]bool, TotalSlots)
	for _, slots := range owned {
		for _, s := range slots {
			if s >= 0 && s < TotalSlots {
				taken[s] = true
			}
		}
	}
	var free []int
	for s, t := range taken {
		if !t {
			free = append(free, s)
		}
	}
	return free
}

func sortedCopy(s []int) []int {
	out := append([]int(nil), s...)
	sort.Ints(out)
	return out
}

func appendMove(moves []Move, from, to string, slots []int) []Move {
	for i := range moves {
		if moves[i].From == from && moves[i].To == to {
			moves[i].Slots = append(moves[i].Slots, slots...)
			return moves
		}
	}
	return append(moves, Move{From: from, To: to, Slots: append([]int(nil), slots...)})
}
