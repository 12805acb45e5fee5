package planner

import (
	"fmt"
	"sort"
	"testing"
)

func span(a, b int) []int {
	var out []int
	for s := a; s <= b; s++ {
		out = append(out, s)
	}
	return out
}

// applyPlan returns the ownership after the moves, failing on moves of slots the source
// does not own.
func applyPlan(t *testing.T, owned map[string][]int, moves []Move) map[string][]int {
	t.Helper()
	own := map[int]string{}
	for id, slots := range owned {
		for _, s := range slots {
			own[s] = id
		}
	}
	for _, mv := range moves {
		if mv.From == mv.To {
			t.Fatalf("move from %s to itself", mv.From)
		}
		for _, s := range mv.Slots {
			if own[s] != mv.From {
				t.Fatalf("slot %d moved from %q but owned by %q", s, mv.From, own[s])
			}
			own[s] = mv.To
		}
	}
	out := map[string][]int{}
	for s, id := range own {
		out[id] = append(out[id], s)
	}
	return out
}

func TestPlanSlots(t *testing.T) {
	three := map[string][]int{"a": span(0, 5461), "b": span(5462, 10922), "c": span(10923, 16383)}
	four := applyPlanForTest(t, []string{"a", "b", "c", "d"}, three)
	tests := []struct {
		name      string
		targets   []string
		owned     map[string][]int
		wantMoved int // slots migrated between owners (not counting unassigned ones)
	}{
		{"initial split of 3", []string{"a", "b", "c"}, map[string][]int{}, 0},
		{"already even", []string{"a", "b", "c"}, three, 0},
		{"scale out 3 to 4", []string{"a", "b", "c", "d"}, three, 4096},
		{"scale in 4 to 3", []string{"a", "b", "c"}, four, 4096},
		{"remove a middle shard", []string{"a", "c"}, three, 5461},
		{"partly assigned", []string{"a", "b"}, map[string][]int{"a": span(0, 99)}, 0},
		{"one primary", []string{"a"}, three, 16384 - 5462},
		{"uneven 5", []string{"a", "b", "c", "d", "e"}, three, 3*5461 - 3*3277 + 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			moves := Slots(tc.targets, tc.owned)
			after := applyPlan(t, tc.owned, moves)
			total, lo, hi := 0, TotalSlots, 0
			for _, id := range tc.targets {
				n := len(after[id])
				total += n
				lo, hi = min(lo, n), max(hi, n)
			}
			if total != TotalSlots {
				t.Fatalf("targets own %d slots, want %d (after: %v)", total, TotalSlots, counts(after))
			}
			if hi-lo > 1 {
				t.Fatalf("uneven split %v", counts(after))
			}
			moved := 0
			for _, mv := range moves {
				if mv.From != "" {
					moved += len(mv.Slots)
				}
			}
			if tc.wantMoved > 0 && moved > tc.wantMoved+1 {
				t.Fatalf("moved %d slots, want at most %d", moved, tc.wantMoved+1)
			}
			if tc.wantMoved == 0 && moved != 0 {
				t.Fatalf("moved %d slots, want none", moved)
			}
		})
	}
}

func applyPlanForTest(t *testing.T, targets []string, owned map[string][]int) map[string][]int {
	t.Helper()
	return applyPlan(t, owned, Slots(targets, owned))
}

func counts(m map[string][]int) string {
	var ids []string
	for id := range m {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	s := ""
	for _, id := range ids {
		s += fmt.Sprintf("%s=%d ", id, len(m[id]))
	}
	return s
}

func TestPlanSlotsInitialIsContiguous(t *testing.T) {
	moves := Slots([]string{"a", "b", "c"}, nil)
	if len(moves) != 3 {
		t.Fatalf("want 3 assignments, got %d", len(moves))
	}
	want := [][2]int{{0, 5461}, {5462, 10922}, {10923, 16383}}
	for i, mv := range moves {
		rs := CompactSlots(mv.Slots)
		if mv.From != "" || len(rs) != 1 || rs[0].Start != want[i][0] || rs[0].End != want[i][1] {
			t.Fatalf("move %d: %+v ranges %v, want %v", i, mv.From, rs, want[i])
		}
	}
}

func TestEvenCounts(t *testing.T) {
	for n := 1; n <= 20; n++ {
		c := EvenCounts(n)
		sum := 0
		for _, v := range c {
			sum += v
			if v != TotalSlots/n && v != TotalSlots/n+1 {
				t.Fatalf("n=%d: share %d", n, v)
			}
		}
		if sum != TotalSlots {
			t.Fatalf("n=%d: sum %d", n, sum)
		}
	}
}
