package topologycontroller

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
	"valkey.io/operator/topologycontroller/planner"
)

// clusterBusy says what keeps a backup from starting ("" when nothing): a roll pending or
// approved, slots migrating or stalled, a scale or other work in progress, a node not
// ready or being deleted, a volume being resized, slots unassigned. A backup taken then
// could capture a half-moved slot or a shard without its point.
func clusterBusy(st *clusterState) string {
	f := factsOf(st)
	var why []string
	switch {
	case f.migrating:
		why = append(why, "slots migrating")
	case f.stalled != "":
		why = append(why, "slots stalled: "+f.stalled)
	}
	why = append(why, busyNodes(st, f)...)
	if len(f.serving) != int(f.shards) {
		why = append(why, fmt.Sprintf("shards %d of %d serving", len(f.serving), f.shards))
	}
	if f.slots != planner.TotalSlots {
		why = append(why, fmt.Sprintf("slots %d of %d assigned", f.slots, planner.TotalSlots))
	}
	if len(why) == 0 && len(f.progress) > 0 {
		why = append(why, strings.Join(f.progress, "; "))
	}
	return truncate(strings.Join(why, "; "), 500)
}

// busyNodes describes the nodes that are not settled.
func busyNodes(st *clusterState, f clusterFacts) []string {
	var why []string
	if desired := int(f.shards * (1 + f.replicas)); len(f.nodes) != desired {
		why = append(why, fmt.Sprintf("nodes %d of %d", len(f.nodes), desired))
	}
	for i, n := range f.nodes {
		node := st.Nodes[i]
		switch {
		case !n.wanted:
			why = append(why, "node "+n.name+" being removed")
		case n.rolling:
			why = append(why, "node "+n.name+" rolling")
		case !n.ready:
			why = append(why, "node "+n.name+" not ready")
		case volumeResizing(node):
			why = append(why, "node "+n.name+" volume resizing")
		}
	}
	return why
}

// volumeResizing tells whether the volume controller reports n's claim being resized.
func volumeResizing(n *valkeyv1.ValkeyNode) bool {
	c := status.Get(n.Status.Conditions, valkeyv1.ConditionVolumeSized)
	return c != nil && c.Status == metav1.ConditionFalse
}
