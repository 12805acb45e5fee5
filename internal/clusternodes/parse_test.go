package clusternodes

import "testing"

// TestParse reads CLUSTER NODES lines of each kind, and the "vars" line nodes.conf ends with.
func TestParse(t *testing.T) {
	out := `07c37dfeb235213a872192d90877d0cd55635b91 127.0.0.1:30004@31004,hostname4 slave e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 0 1426238317239 4 connected
67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1 127.0.0.1:30002@31002 master - 0 1426238316232 2 connected 5461-10922
e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 127.0.0.1:30001@31001 myself,master - 0 0 1 connected 0-5460 [5461-<-67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1] [93->-292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f]
6ec23923021cf3ffec47632106199cb7f496ce01 :0@0 master,fail,noaddr - 1426238316232 1426238316232 5 disconnected 10923 10925-10926
vars currentEpoch 5 lastVoteEpoch 0
`
	nodes, err := Parse(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 4 {
		t.Fatalf("got %d nodes", len(nodes))
	}
	if n := nodes[0]; n.Primary() || n.PrimaryID != "e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca" || n.Addr != "127.0.0.1:30004" || !n.Connected {
		t.Fatalf("replica line parsed as %+v", n)
	}
	me := nodes[2]
	if !me.Myself() || me.SlotCount() != 5461 || me.Importing[5461] != "67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1" || me.Migrating[93] != "292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f" {
		t.Fatalf("myself line parsed as %+v", me)
	}
	dead := nodes[3]
	if !dead.Failed() || dead.Addr != "" || dead.SlotCount() != 3 || dead.Connected {
		t.Fatalf("failed line parsed as %+v", dead)
	}
	if Myself(nodes) != &nodes[2] || ByID(nodes, "6ec23923021cf3ffec47632106199cb7f496ce01") != &nodes[3] || ByID(nodes, "x") != nil {
		t.Fatal("Myself or ByID found the wrong line")
	}
	if _, err := Parse("garbage line\n"); err == nil {
		t.Fatal("want an error for a malformed line")
	}
}
