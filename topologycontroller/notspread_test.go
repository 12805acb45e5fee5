package topologycontroller

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/clusternodes"
	"valkey.io/operator/topologycontroller/round"
)

// A primary that was just given slots knows them before the seed does: until the seed sees
// them the round is not settled, and the controller looks again soon.
func TestSlotsNotSpreadNamesThePrimaryTheSeedDoesNotSeeYet(t *testing.T) {
	seedView, err := clusternodes.Parse(
		"aaaa 10.0.0.1:6379@16379 myself,master - 0 0 1 connected 0-5460\n" +
			"bbbb 10.0.0.2:6379@16379 master - 0 0 2 connected\n")
	if err != nil {
		t.Fatal(err)
	}
	bView, err := clusternodes.Parse("bbbb 10.0.0.2:6379@16379 myself,master - 0 0 2 connected 5461-10922\n")
	if err != nil {
		t.Fatal(err)
	}
	node := func(name string) *valkeyv1.ValkeyNode {
		return &valkeyv1.ValkeyNode{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	a := &round.Member{Node: node("a"), Self: &seedView[0]}
	b := &round.Member{Node: node("b"), Self: &bView[0]}
	st := newClusterState(&round.State{
		Nodes:   []*valkeyv1.ValkeyNode{a.Node, b.Node},
		Members: map[string]*round.Member{"a": a, "b": b},
		Seed:    a,
		View:    map[string]*clusternodes.Node{"aaaa": &seedView[0], "bbbb": &seedView[1]},
	})
	why := slotsNotSpread(st)
	if len(why) != 1 || !strings.HasPrefix(why[0], "b owns 5462 slots, the seed sees 0") {
		t.Errorf("slots not spread yet: %q, want b's alone", why)
	}
}
