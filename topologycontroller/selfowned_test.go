package topologycontroller

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// A primary that was just given slots knows them before the seed does: the slots are not
// free, and are not assigned again (Valkey would refuse them as busy).
func TestSlotOwnersCountsSlotsTheSeedHasNotSeenYet(t *testing.T) {
	seedView, err := parseClusterNodes(
		"aaaa 10.0.0.1:6379@16379 myself,master - 0 0 1 connected 0-5460\n" +
			"bbbb 10.0.0.2:6379@16379 master - 0 0 2 connected\n" +
			"cccc 10.0.0.3:6379@16379 master - 0 0 3 connected\n")
	if err != nil {
		t.Fatal(err)
	}
	bView, err := parseClusterNodes("bbbb 10.0.0.2:6379@16379 myself,master - 0 0 2 connected 5461-10922\n")
	if err != nil {
		t.Fatal(err)
	}
	cView, err := parseClusterNodes("cccc 10.0.0.3:6379@16379 myself,master - 0 0 3 connected\n")
	if err != nil {
		t.Fatal(err)
	}
	node := func(name string) *valkeyv1.ValkeyNode {
		return &valkeyv1.ValkeyNode{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	a := &member{node: node("a"), self: &seedView[0]}
	b := &member{node: node("b"), self: &bView[0]}
	c := &member{node: node("c"), self: &cView[0]}
	st := &clusterState{
		nodes:   []*valkeyv1.ValkeyNode{a.node, b.node, c.node},
		members: map[string]*member{"a": a, "b": b, "c": c},
		seed:    a,
		view:    map[string]*clusterNode{},
		byID:    map[string]*member{"aaaa": a, "bbbb": b, "cccc": c},
	}
	for i := range seedView {
		st.view[seedView[i].ID] = &seedView[i]
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
	why := slotsNotSpread(st)
	if len(why) != 1 || !strings.HasPrefix(why[0], "b owns 5462 slots, the seed sees 0") {
		t.Errorf("slots not spread yet: %q, want b's alone", why)
	}
}
