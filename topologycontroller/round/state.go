package round

import (
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/clusternodes"
)

// State is what one reconcile knows of a cluster: the API objects, what each server says,
// and the node status it will apply. The phases of the round read it and decide; what a
// concern found beyond that it returns to the reconciler.
type State struct {
	Cluster *valkeyv1.ValkeyCluster
	Conns   *Conns
	Nodes   []*valkeyv1.ValkeyNode        // every ValkeyNode of the cluster, by name
	Members map[string]*Member            // by node name: nodes with a ready pod
	Seed    *Member                       // the member whose view is the reference
	View    map[string]*clusternodes.Node // the seed's view by node ID
	ByID    map[string]*Member            // reachable members by node ID
	Primary map[int32]*Member             // shard → its reachable primary
	Out     map[string]*NodeStatus        // by node name: the status to apply
	Roll    map[string]*metav1.Condition  // RollApproved decided this round
	Probed  map[string]*Member            // by node name: servers of not-ready pods dialed for a roll

	// Progress is the work in progress found this round; Requeue how soon to look again.
	Progress []string
	Requeue  time.Duration
}

// NodeStatus is the topology status of one ValkeyNode.
type NodeStatus struct {
	Joined metav1.Condition
	Topo   *valkeyv1.TopologyStatus
}

// NewState is the state of a round of cluster vc with its nodes, before anything was observed.
func NewState(vc *valkeyv1.ValkeyCluster, nodes []*valkeyv1.ValkeyNode, cs *Conns) *State {
	return &State{
		Cluster: vc, Conns: cs, Nodes: nodes,
		Members: map[string]*Member{}, View: map[string]*clusternodes.Node{}, ByID: map[string]*Member{},
		Primary: map[int32]*Member{}, Out: map[string]*NodeStatus{},
		Roll: map[string]*metav1.Condition{},
	}
}

// Wait records work in progress and asks to look again within d.
func (st *State) Wait(msg string, d time.Duration) {
	st.Progress = append(st.Progress, msg)
	if st.Requeue == 0 || d < st.Requeue {
		st.Requeue = d
	}
}

// InCluster tells whether m is a member of the seed's cluster (the seed knows it at its
// address, past the handshake).
func (st *State) InCluster(m *Member) bool {
	if !m.Reachable() || st.Seed == nil {
		return false
	}
	if m == st.Seed {
		return true
	}
	n := st.View[m.ID()]
	return n != nil && n.Addr == m.Addr
}

// ReportedIDs are the node IDs some ValkeyNode stands for: the live ID of a reachable node,
// else the ID its status last recorded.
func (st *State) ReportedIDs() map[string]bool {
	ids := map[string]bool{}
	for _, n := range st.Nodes {
		if m := st.Members[n.Name]; m.Reachable() {
			ids[m.ID()] = true
		} else if id := RecordedID(n); id != "" {
			ids[id] = true
		}
	}
	return ids
}

// RecordedID is the node ID a ValkeyNode's status last recorded.
func RecordedID(n *valkeyv1.ValkeyNode) string {
	if n.Status.Topology == nil {
		return ""
	}
	return n.Status.Topology.NodeID
}

// SortedMembers are the reachable members in node name order.
func (st *State) SortedMembers() []*Member {
	var out []*Member
	for _, n := range st.Nodes {
		if m := st.Members[n.Name]; m.Reachable() {
			out = append(out, m)
		}
	}
	return out
}

// Joined tells whether n's ClusterJoined decided this round is True.
func (st *State) Joined(n *valkeyv1.ValkeyNode) bool {
	o := st.Out[n.Name]
	return o != nil && o.Joined.Status == metav1.ConditionTrue
}

// SortNodes sorts nodes by shard, then replica index, then name.
func SortNodes(nodes []*valkeyv1.ValkeyNode) {
	sort.Slice(nodes, func(i, j int) bool {
		a, b := nodes[i], nodes[j]
		if a.Spec.Shard != b.Spec.Shard {
			return a.Spec.Shard < b.Spec.Shard
		}
		if a.Spec.ReplicaIndex != b.Spec.ReplicaIndex {
			return a.Spec.ReplicaIndex < b.Spec.ReplicaIndex
		}
		return a.Name < b.Name
	})
}

// PodIP is the pod IP a node's workload last reported ("" before its pod has one).
func PodIP(n *valkeyv1.ValkeyNode) string {
	if n.Status.Workload == nil {
		return ""
	}
	return n.Status.Workload.PodIP
}

// Short is the requeue delay while Valkey-side work is in progress (Valkey is not a
// Kubernetes watch source, so progress there is only seen by looking again).
const Short = 500 * time.Millisecond

// ShortID is a node ID cut to 8 characters, for messages.
func ShortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// AssignedSlots is the number of slots some primary owns in the seed's view.
func (st *State) AssignedSlots() int {
	total := 0
	for _, n := range st.View {
		if n.Primary() {
			total += n.SlotCount()
		}
	}
	return total
}
