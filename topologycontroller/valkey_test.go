package topologycontroller

import "testing"

func TestCompactSlots(t *testing.T) {
	rs := compactSlots([]int{5, 1, 2, 3, 9, 10, 3})
	want := []slotRange{{Start: 1, End: 3}, {Start: 5, End: 5}, {Start: 9, End: 10}}
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
	got := RollOrder([]RollCandidate{{"c-0-0", true}, {"c-1-1", false}, {"c-0-1", false}, {"c-1-0", true}})
	want := []string{"c-0-1", "c-1-1", "c-0-0", "c-1-0"}
	for i, w := range want {
		if got[i].Name != w {
			t.Fatalf("order %v, want %v", got, want)
		}
	}
}

func TestReplicationOffset(t *testing.T) {
	if o := replicationOffset(parseInfo("# Replication\r\nrole:slave\r\nslave_repl_offset:42\r\n")); o != 42 {
		t.Fatalf("offset %d", o)
	}
}
