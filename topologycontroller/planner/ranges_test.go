package planner

import (
	"testing"

	"valkey.io/operator/internal/clusternodes"
)

func TestCompactSlots(t *testing.T) {
	rs := CompactSlots([]int{5, 1, 2, 3, 9, 10, 3})
	want := []clusternodes.SlotRange{{Start: 1, End: 3}, {Start: 5, End: 5}, {Start: 9, End: 10}}
	if len(rs) != len(want) {
		t.Fatalf("got %v", rs)
	}
	for i := range want {
		if rs[i] != want[i] {
			t.Fatalf("got %v, want %v", rs, want)
		}
	}
}

func TestRollOrder(t *testing.T) {
	got := RollOrder([]RollCandidate{{Name: "c-0-0", Primary: true}, {Name: "c-1-1"}, {Name: "c-0-1"}, {Name: "c-1-0", Primary: true}})
	want := []string{"c-0-1", "c-1-1", "c-0-0", "c-1-0"}
	for i, w := range want {
		if got[i].Name != w {
			t.Fatalf("order %v, want %v", got, want)
		}
	}
}
