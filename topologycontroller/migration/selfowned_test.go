package migration

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/clusternodes"
	"valkey.io/operator/topologycontroller/round"
)

// A primary that was just given slots knows them before the seed does: the slots are not
// free, and are not assigned again (Valkey would refuse them as busy).
func TestSlotOwnersCountsSlotsTheSeedHasNotSeenYet(t *testing.T) {
	seedView, err := clusternodes.Parse(
		"aaaa 10.0.0.1:6379@16379 myself,master - 0 0 1 connected 0-5460\n" +
			"bbbb 10.0.0.2:6379@16379 master - 0 0 2 connected\n" +
			"cccc 10.0.0.3:6379@16379 master - 0 0 3 connected\n")
	if err != nil {
		t.Fatal(err)
	}
	bView, err := clusternodes.Parse("bbbb 10.0.0.2:6379@16379 myself,master - 0 0 2 connected 5461-10922\n")
	if err != nil {
		t.Fatal(err)
	}
	cView, err := clusternodes.Parse("cccc 10.0.0.3:6379@16379 myself,master - 0 0 3 connected\n")
	if err != nil {
		t.Fatal(err)
	}
	node := func(name string) *valkeyv1.ValkeyNode {
		return &valkeyv1.ValkeyNode{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	a := &round.Member{Node: node("a"), Self: &seedView[0]}
	b := &round.Member{Node: node("b"), Self: &bView[0]}
	c := &round.Member{Node: node("c"), Self: &cView[0]}
	st := NewRound(&round.State{
		Nodes:   []*valkeyv1.ValkeyNode{a.Node, b.Node, c.Node},
		Members: map[string]*round.Member{"a": a, "b": b, "c": c},
		Seed:    a,
		View:    map[string]*clusternodes.Node{},
		ByID:    map[string]*round.Member{"aaaa": a, "bbbb": b, "cccc": c},
	})
	for i := range seedView {
		st.View[seedView[i].ID] = &seedView[i]
	}
	owned, orphan, ok := slotOwners(st)
	if !ok || len(orphan) != 0 {
		t.Fatalf("ok %v, orphans %d", ok, len(orphan))
	}
	if got := len(owned["bbbb"]); got != 5462 {
		t.Errorf("bbbb owns %d slots, want the 5462 it reports itself", got)
	}
	if got := len(owned["aaaa"]); got != 5461 {
		t.Errorf("aaaa owns %d slots, want 5461", got)
	}
	if got := len(owned["cccc"]); got != 0 {
		t.Errorf("cccc owns %d slots, want none", got)
	}

	// Until the seed sees them, the round is not settled: the controller looks again soon.
	why := SlotsNotSpread(st.State)
	if len(why) != 1 || !strings.HasPrefix(why[0], "b owns 5462 slots, the seed sees 0") {
		t.Errorf("slots not spread yet: %q, want b's alone", why)
	}

}
