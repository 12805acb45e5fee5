package round

import (
	"testing"

	"valkey.io/operator/internal/clusternodes"
)

// A member's view as CLUSTER NODES gives it: a, itself; b, seen well; c, at a stale address;
// d, in the handshake; e, not a member (an old ID), owning slots.
const scanned = `aaaa 10.0.0.1:6379@16379 myself,master - 0 0 1 connected 0-99 [100->-bbbb]
bbbb 10.0.0.2:6379@16379 master - 0 0 2 connected 100-199
cccc 10.0.0.9:6379@16379 slave bbbb 0 0 2 connected
dddd 10.0.0.4:6379@16379 handshake - 0 0 0 connected 500-599
eeee 10.0.0.5:6379@16379 master,fail - 0 0 3 disconnected 200-299
`

func TestViewScan(t *testing.T) {
	ms := map[string]*Member{}
	for id, addr := range map[string]string{"aaaa": "10.0.0.1:6379", "bbbb": "10.0.0.2:6379", "cccc": "10.0.0.3:6379", "dddd": "10.0.0.4:6379", "ffff": "10.0.0.6:6379"} {
		ms[id] = &Member{Addr: addr, Self: &clusternodes.Node{ID: id}}
	}
	a := ms["aaaa"]
	a.Self = nil
	vs := &viewScan{byID: ms}
	if err := vs.scan(a, scanned); err != nil {
		t.Fatal(err)
	}
	if a.Self == nil || a.Self.ID != "aaaa" || a.Self.SlotCount() != 100 || a.Self.Migrating[100] != "bbbb" {
		t.Fatalf("self %+v", a.Self)
	}
	if a.Lines != 5 || a.Slots != 300 {
		t.Fatalf("lines %d slots %d, want 5 and 300 (the handshake line's slots left out)", a.Lines, a.Slots)
	}
	want := map[string]string{"cccc": "10.0.0.9:6379", "dddd": "10.0.0.4:6379", "ffff": ""}
	if len(a.Unseen) != len(want) {
		t.Fatalf("unseen %v, want %v", a.Unseen, want)
	}
	for id, addr := range want {
		if got, ok := a.Unseen[id]; !ok || got != addr {
			t.Fatalf("unseen %v, want %v", a.Unseen, want)
		}
	}
	if !a.Sees(ms["bbbb"]) || a.Sees(ms["cccc"]) || a.Sees(ms["ffff"]) {
		t.Fatalf("sees: unseen %v", a.Unseen)
	}
	if len(a.Others) != 1 || a.Other("eeee") == nil || !a.Other("eeee").Failed() || a.Other("eeee").SlotCount() != 100 {
		t.Fatalf("others %+v", a.Others)
	}
}

func TestViewScanWithoutMyself(t *testing.T) {
	m := &Member{Addr: "10.0.0.1:6379"}
	vs := &viewScan{byID: map[string]*Member{}}
	if err := vs.scan(m, "bbbb 10.0.0.2:6379@16379 master - 0 0 2 connected\n"); err == nil {
		t.Fatal("a view without a myself line was taken")
	}
}
