package topologycontroller

import "testing"

// A member's view as CLUSTER NODES gives it: a, itself; b, seen well; c, at a stale address;
// d, in the handshake; e, not a member (an old ID), owning slots.
const scanned = `aaaa 10.0.0.1:6379@16379 myself,master - 0 0 1 connected 0-99 [100->-bbbb]
bbbb 10.0.0.2:6379@16379 master - 0 0 2 connected 100-199
cccc 10.0.0.9:6379@16379 slave bbbb 0 0 2 connected
dddd 10.0.0.4:6379@16379 handshake - 0 0 0 connected 500-599
eeee 10.0.0.5:6379@16379 master,fail - 0 0 3 disconnected 200-299
`

func TestViewScan(t *testing.T) {
	ms := map[string]*member{}
	for id, addr := range map[string]string{"aaaa": "10.0.0.1:6379", "bbbb": "10.0.0.2:6379", "cccc": "10.0.0.3:6379", "dddd": "10.0.0.4:6379", "ffff": "10.0.0.6:6379"} {
		ms[id] = &member{addr: addr, self: &clusterNode{ID: id}}
	}
	a := ms["aaaa"]
	a.self = nil
	vs := &viewScan{byID: ms}
	if err := vs.scan(a, scanned); err != nil {
		t.Fatal(err)
	}
	if a.self == nil || a.self.ID != "aaaa" || a.self.SlotCount() != 100 || a.self.Migrating[100] != "bbbb" {
		t.Fatalf("self %+v", a.self)
	}
	if a.lines != 5 || a.slots != 300 {
		t.Fatalf("lines %d slots %d, want 5 and 300 (the handshake line's slots left out)", a.lines, a.slots)
	}
	want := map[string]string{"cccc": "10.0.0.9:6379", "dddd": "10.0.0.4:6379", "ffff": ""}
	if len(a.unseen) != len(want) {
		t.Fatalf("unseen %v, want %v", a.unseen, want)
	}
	for id, addr := range want {
		if got, ok := a.unseen[id]; !ok || got != addr {
			t.Fatalf("unseen %v, want %v", a.unseen, want)
		}
	}
	if !a.sees(ms["bbbb"]) || a.sees(ms["cccc"]) || a.sees(ms["ffff"]) {
		t.Fatalf("sees: unseen %v", a.unseen)
	}
	if len(a.others) != 1 || a.other("eeee") == nil || !a.other("eeee").Failed() || a.other("eeee").SlotCount() != 100 {
		t.Fatalf("others %+v", a.others)
	}
}

func TestViewScanWithoutMyself(t *testing.T) {
	m := &member{addr: "10.0.0.1:6379"}
	vs := &viewScan{byID: map[string]*member{}}
	if err := vs.scan(m, "bbbb 10.0.0.2:6379@16379 master - 0 0 2 connected\n"); err == nil {
		t.Fatal("a view without a myself line was taken")
	}
}
