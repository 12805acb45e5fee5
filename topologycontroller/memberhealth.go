package topologycontroller

import (
	"fmt"
	"sort"
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
	var out []string
	for _, n := range st.Nodes {
		if !memberExpected(st, n) {
			continue
		}
		m := st.Members[n.Name]
		if !m.Reachable() {
			out = append(out, n.Name+" does not answer")
			continue
		}
		if by := seenFailingBy(st, m); len(by) > 0 {
			out = append(out, fmt.Sprintf("%s is seen failing or not at all by %s", n.Name, strings.Join(by, ", ")))
		}
	}
	return out
}

// memberExpected tells whether n should answer as a member: wanted, joined before, not
// on a lost Kubernetes node and not restarting by an approved roll.
func memberExpected(st *clusterState, n *valkeyv1.ValkeyNode) bool {
	return n.DeletionTimestamp.IsZero() && round.Wanted(st.Cluster, n.Spec.Shard, n.Spec.ReplicaIndex) &&
		round.RecordedID(n) != "" && lostMessage(n) == "" && !restartsByApproval(st, n)
}

// restartsByApproval tells whether n is approved to restart (a planned roll).
func restartsByApproval(st *clusterState, n *valkeyv1.ValkeyNode) bool {
	return rollApproval(st, n).Status == metav1.ConditionTrue
}

// seenFailingBy names the members of the cluster that do not see m well (see
// round.Member.Note); a node not met yet is no witness.
func seenFailingBy(st *clusterState, m *round.Member) []string {
	var by []string
	for _, o := range st.SortedMembers() {
		if o != m && st.InCluster(o) && memberExpected(st, o.Node) && !o.Sees(m) {
			by = append(by, o.Node.Name)
		}
	}
	return by
}

// shardsWithoutReplica describes the shards serving slots whose primary has no replica
// with its link up, when the spec wants replicas; a shard with a member restarting by an
// approved roll is left out.
func shardsWithoutReplica(st *clusterState) []string {
	if st.Cluster.Spec.Replicas == 0 {
		return nil
	}
	var out []string
	for s := int32(0); s < st.Cluster.Spec.Shards; s++ {
		p := st.Primary[s]
		if p == nil || p.Self.SlotCount() == 0 || len(failover.SyncedReplicas(st.State, p)) > 0 || shardRestarting(st, s) {
			continue
		}
		out = append(out, fmt.Sprintf("shard %d (primary %s) has no replica in sync", s, p.Node.Name))
	}
	sort.Strings(out)
	return out
}

// shardRestarting tells whether some node of shard s is approved to restart.
func shardRestarting(st *clusterState, s int32) bool {
	for _, n := range st.Nodes {
		if n.Spec.Shard == s && restartsByApproval(st, n) {
			return true
		}
	}
	return false
}
