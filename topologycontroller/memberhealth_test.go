package topologycontroller

import (
	"fmt"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/clusternodes"
	"valkey.io/operator/internal/status"
	"valkey.io/operator/topologycontroller/round"
)

// memberRound is a round of a 2 × 1 cluster whose four servers all answer, see one another
// and whose replicas are in sync; each node's status records its node ID.
func memberRound() *clusterState {
	vc := &valkeyv1.ValkeyCluster{}
	vc.Name, vc.Spec.Shards, vc.Spec.Replicas = "c", 2, 1
	st := round.NewState(vc, nil, nil)
	for _, n := range []struct {
		name           string
		shard, replica int32
	}{{"c-0-0", 0, 0}, {"c-0-1", 0, 1}, {"c-1-0", 1, 0}, {"c-1-1", 1, 1}} {
		node := &valkeyv1.ValkeyNode{}
		node.Name, node.Spec.Shard, node.Spec.ReplicaIndex = n.name, n.shard, n.replica
		node.Status.Topology = &valkeyv1.TopologyStatus{NodeID: "id-" + n.name}
		st.Nodes = append(st.Nodes, node)
		self := &clusternodes.Node{ID: "id-" + n.name, Addr: "10.0.0.1:" + n.name, Flags: map[string]bool{"myself": true}}
		m := &round.Member{Node: node, Addr: self.Addr, Self: self, Repl: map[string]string{}}
		if n.replica == 0 {
			self.Flags["master"] = true
			self.Slots = []clusternodes.SlotRange{{Start: int(n.shard) * 8192, End: int(n.shard)*8192 + 8191}}
			st.Primary[n.shard] = m
		} else {
			self.PrimaryID, m.Repl["master_link_status"] = fmt.Sprintf("id-c-%d-0", n.shard), "up"
		}
		st.Members[n.name] = m
		st.ByID[self.ID] = m
		st.View[self.ID] = self
	}
	st.Seed = st.Members["c-0-0"]
	return newClusterState(st, nil)
}

// Degraded names a member that does not answer, one its peers see failing (a partition),
// and a shard whose replica is not in sync; a planned restart and a node on a lost
// Kubernetes node are not named as unreachable.
func TestMemberHealthFindings(t *testing.T) {
	st := memberRound()
	if got, want := unansweringMembers(st), []string(nil); !reflect.DeepEqual(got, want) {
		t.Errorf("healthy: unanswering %v", got)
	}
	if got := shardsWithoutReplica(st); got != nil {
		t.Errorf("healthy: without replica %v", got)
	}

	st.Members["c-1-1"].Self = nil // its server did not answer
	st.Members["c-0-1"].Note("id-c-0-0", "10.0.0.1:c-0-0")
	st.Members["c-1-0"].Note("id-c-0-0", "10.0.0.1:c-0-0")
	want := []string{"c-0-0 is seen failing or not at all by c-0-1, c-1-0", "c-1-1 does not answer"}
	if got := unansweringMembers(st); !reflect.DeepEqual(got, want) {
		t.Errorf("unanswering %q, want %q", got, want)
	}
	if got, want := shardsWithoutReplica(st), []string{"shard 1 (primary c-1-0) has no replica in sync"}; !reflect.DeepEqual(got, want) {
		t.Errorf("without replica %q, want %q", got, want)
	}
	st.Members["c-0-1"].Repl["master_link_status"] = "down"
	if got := len(shardsWithoutReplica(st)); got != 2 {
		t.Errorf("a replica whose link is down still counts: %d shards without a replica, want 2", got)
	}

	// c-1-1 restarts by an approved roll: neither it nor its shard is named.
	approved := status.Condition(valkeyv1.ConditionRollApproved, true, valkeyv1.ReasonApproved, "approved")
	st.Roll["c-1-1"] = &approved
	if got := unansweringMembers(st); len(got) != 1 || got[0] != want[0] {
		t.Errorf("with c-1-1 rolling: unanswering %q, want only %q", got, want[0])
	}
	if got := shardsWithoutReplica(st); len(got) != 1 || got[0] != "shard 0 (primary c-0-0) has no replica in sync" {
		t.Errorf("with c-1-1 rolling: without replica %q", got)
	}

	// c-1-1 on a lost Kubernetes node: NodesLost names it instead.
	delete(st.Roll, "c-1-1")
	st.Nodes[3].Status.Conditions = []metav1.Condition{status.Condition(valkeyv1.ConditionWorkloadReady, false, valkeyv1.ReasonNodeNotReady, "k3 is Unknown")}
	if got := unansweringMembers(st); len(got) != 1 || got[0] != want[0] {
		t.Errorf("with c-1-1 lost: unanswering %q, want only %q", got, want[0])
	}
}

// The findings make Degraded True with their reason, a lost node's reason first.
func TestDegradedByMemberFindings(t *testing.T) {
	f := healthy()
	f.withoutReplica = []string{"shard 1 (primary c-1-0) has no replica in sync"}
	d := status.Get(summarize(f).Conditions, valkeyv1.ConditionDegraded)
	if string(d.Status)+"/"+d.Reason != "True/ReplicasMissing" || d.Message != f.withoutReplica[0] {
		t.Errorf("Degraded = %s/%s %q", d.Status, d.Reason, d.Message)
	}
	f.unanswering = []string{"c-1-1 does not answer"}
	d = status.Get(summarize(f).Conditions, valkeyv1.ConditionDegraded)
	if string(d.Status)+"/"+d.Reason != "True/MembersUnreachable" || d.Message != "c-1-1 does not answer; shard 1 (primary c-1-0) has no replica in sync" {
		t.Errorf("Degraded = %s/%s %q", d.Status, d.Reason, d.Message)
	}
	f.nodes[3].ready, f.nodes[3].lost = false, "k3 is Unknown"
	if d := status.Get(summarize(f).Conditions, valkeyv1.ConditionDegraded); d.Reason != valkeyv1.ReasonNodesLost {
		t.Errorf("with a lost node, Degraded reason %s, want NodesLost", d.Reason)
	}
	if ready := status.Get(summarize(f).Conditions, valkeyv1.ConditionReady); ready.Status != metav1.ConditionTrue {
		t.Errorf("the findings change Ready: %v", ready)
	}
}
