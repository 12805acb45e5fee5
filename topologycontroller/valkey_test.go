package topologycontroller

import "testing"

func TestParseClusterNodes(t *testing.T) {
	out := `07c37dfeb235213a872192d90877d0cd55635b91 127.0.0.1:30004@31004,hostname4 slave e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 0 1426238317239 4 connected
67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1 127.0.0.1:30002@31002 master - 0 1426238316232 2 connected 5461-10922
e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 127.0.0.1:30001@31001 myself,master - 0 0 1 connected 0-5460 [5461-<-67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1] [93->-292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f]
6ec23923021cf3ffec47632106199cb7f496ce01 :0@0 master,fail,noaddr - 1426238316232 1426238316232 5 disconnected 10923 10925-10926
`
	nodes, err := parseClusterNodes(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 4 {
		t.Fatalf("got %d nodes", len(nodes))
	}
	if n := nodes[0]; n.primary() || n.PrimaryID != "e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca" || n.Addr != "127.0.0.1:30004" || !n.Connected {
		t.Fatalf("replica line parsed as %+v", n)
	}
	me := nodes[2]
	if !me.myself() || me.slotCount() != 5461 || me.Importing[5461] != "67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1" || me.Migrating[93] != "292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f" {
		t.Fatalf("myself line parsed as %+v", me)
	}
	dead := nodes[3]
	if !dead.failed() || dead.Addr != "" || dead.slotCount() != 3 || dead.Connected {
		t.Fatalf("failed line parsed as %+v", dead)
	}
	if _, err := parseClusterNodes("garbage line\n"); err == nil {
		t.Fatal("want an error for a malformed line")
	}
}

func TestCompactSlots(t *testing.T) {
	rs := compactSlots([]int{5, 1, 2, 3, 9, 10, 3})
	want := []slotRange{{1, 3}, {5, 5}, {9, 10}}
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
