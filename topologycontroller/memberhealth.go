package topologycontroller

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/topologycontroller/failover"
	"valkey.io/operator/topologycontroller/round"
)

// Member health for Degraded (see degraded): which members that joined the cluster do not
// answer or are seen failing, and which serving shards have no replica in sync. A planned
// restart (an approved roll) is not a degradation: Progressing says Rolling; nor is a node
// on a lost Kubernetes node named twice (NodesLost names it).

// unansweringMembers describes the wanted nodes that joined the cluster (their status
// records a node ID) and whose server does not answer, or that reachable members see
// failing, at another address or not at all.
func unansweringMembers(st *clusterState) []string {
	expected := expectedMembers(st)
	witnesses := witnessesOf(st, expected)
	var out []string
	for _, n := range st.Nodes {
		if !expected[n.Name] {
			continue
		}
		m := st.Members[n.Name]
		if !m.Reachable() {
			out = append(out, n.Name+" does not answer")
			continue
		}
		if by := seenFailingBy(witnesses, m); len(by) > 0 {
			out = append(out, fmt.Sprintf("%s is seen failing or not at all by %s", n.Name, strings.Join(by, ", ")))
		}
	}
	return out
}

// expectedMembers are the nodes that should answer as members: wanted, joined before, not
// on a lost Kubernetes node and not restarting by an approved roll.
func expectedMembers(st *clusterState) map[string]bool {
	out := map[string]bool{}
	for _, n := range st.Nodes {
		if n.DeletionTimestamp.IsZero() && round.Wanted(st.Cluster, n.Spec.Shard, n.Spec.ReplicaIndex) &&
			round.RecordedID(n) != "" && lostMessage(n) == "" && !restartsByApproval(st, n) {
			out[n.Name] = true
		}
	}
	return out
}

// restartsByApproval tells whether n is approved to restart (a planned roll).
func restartsByApproval(st *clusterState, n *valkeyv1.ValkeyNode) bool {
	return rollApproval(st, n).Status == metav1.ConditionTrue
}

// witnessesOf are the members whose view tells whether the others are seen well: expected
// members of the seed's cluster (a node not met yet is no witness).
func witnessesOf(st *clusterState, expected map[string]bool) []*round.Member {
	var out []*round.Member
	for _, o := range st.SortedMembers() {
		if expected[o.Node.Name] && st.InCluster(o) {
			out = append(out, o)
		}
	}
	return out
}

// seenFailingBy names the witnesses that do not see m well (see round.Member.Note).
func seenFailingBy(witnesses []*round.Member, m *round.Member) []string {
	var by []string
	for _, o := range witnesses {
		if o != m && !o.Sees(m) {
			by = append(by, o.Node.Name)
		}
	}
	return by
}

// shardsWithoutReplica describes the shards serving slots whose primary has no replica
// with its link up, when the spec wants replicas; a shard with a member restarting by an
// approved roll is left out. degraded sorts the findings.
func shardsWithoutReplica(st *clusterState) []string {
	if st.Cluster.Spec.Replicas == 0 {
		return nil
	}
	restarting := map[int32]bool{}
	for _, n := range st.Nodes {
		if restartsByApproval(st, n) {
			restarting[n.Spec.Shard] = true
		}
	}
	var out []string
	for s := int32(0); s < st.Cluster.Spec.Shards; s++ {
		p := st.Primary[s]
		if p == nil || p.Self.SlotCount() == 0 || restarting[s] || len(failover.SyncedReplicas(st.State, p)) > 0 {
			continue
		}
		out = append(out, fmt.Sprintf("shard %d (primary %s) has no replica in sync", s, p.Node.Name))
	}
	return out
}
