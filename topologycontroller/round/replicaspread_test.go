package round

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/clusternodes"
)

// A replica just attached is a primary without slots in a peer's view until gossip carries
// its role: the cluster is not settled until every view shows it as a replica.
func TestReplicasNotSpread(t *testing.T) {
	st := NewState(&valkeyv1.ValkeyCluster{}, nil, nil)
	member := func(name, id, addr string, self clusternodes.Node) *Member {
		self.ID = id
		m := &Member{Node: &valkeyv1.ValkeyNode{ObjectMeta: metav1.ObjectMeta{Name: name}}, Addr: addr, Self: &self}
		st.Nodes = append(st.Nodes, m.Node)
		st.Members[name], st.ByID[id] = m, m
		return m
	}
	a := member("c-0-0", "aaaa", "10.0.0.1:6379", clusternodes.Node{Flags: map[string]bool{"master": true}})
	member("c-0-1", "bbbb", "10.0.0.2:6379", clusternodes.Node{Flags: map[string]bool{"slave": true}, PrimaryID: "aaaa"})
	member("c-1-0", "cccc", "10.0.0.3:6379", clusternodes.Node{Flags: map[string]bool{"master": true}})
	vs := &viewScan{byID: st.ByID}

	stale := strings.Join([]string{
		"aaaa 10.0.0.1:6379@16379 myself,master - 0 0 1 connected 0-8191",
		"bbbb 10.0.0.2:6379@16379 master - 0 0 0 connected",
		"cccc 10.0.0.3:6379@16379 master - 0 0 2 connected",
	}, "\n")
	if err := vs.scan(a, stale); err != nil {
		t.Fatal(err)
	}
	why := ReplicasNotSpread(st)
	if len(why) != 1 || !strings.Contains(why[0], "c-0-0 sees c-0-1 as a primary") {
		t.Fatalf("a replica shown as a primary without slots: %q, want c-0-1 named once (c-1-0 is a primary with no slots yet, which is no replica)", why)
	}

	failed := strings.Replace(stale, "bbbb 10.0.0.2:6379@16379 master -", "bbbb 10.0.0.2:6379@16379 master,fail -", 1)
	if err := vs.scan(a, failed); err != nil {
		t.Fatal(err)
	}
	if why := ReplicasNotSpread(st); len(why) != 0 {
		t.Fatalf("a member a view marks failed is not seen (see Sees), which is not gossip still spreading: %q", why)
	}

	spread := strings.Replace(stale, "bbbb 10.0.0.2:6379@16379 master - 0 0 0", "bbbb 10.0.0.2:6379@16379 slave aaaa 0 0 1", 1)
	if err := vs.scan(a, spread); err != nil {
		t.Fatal(err)
	}
	if why := ReplicasNotSpread(st); len(why) != 0 {
		t.Fatalf("every view shows the replica as one: %q", why)
	}
}
