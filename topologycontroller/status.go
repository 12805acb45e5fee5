package topologycontroller

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
	"valkey.io/operator/topologycontroller/membership"
	"valkey.io/operator/topologycontroller/roll"
	"valkey.io/operator/topologycontroller/round"
)

// computeJoined decides ClusterJoined and status.topology of every node from what the
// servers said this round.
func computeJoined(st *clusterState) {
	for _, n := range st.Nodes {
		o := &round.NodeStatus{Topo: n.Status.Topology.DeepCopy()}
		st.Out[n.Name] = o
		m := st.Members[n.Name]
		switch {
		case m == nil:
			o.Joined = round.JoinedCondition(false, valkeyv1.ReasonWaitingForWorkload, "waiting for the node's pod to be ready")
		case !m.Reachable():
			o.Joined = round.JoinedCondition(false, valkeyv1.ReasonWaitingForWorkload, "cannot reach the server at "+m.Addr)
		default:
			o.Topo = topologyOf(m)
			o.Joined = st.memberJoined(m)
		}
	}
}

// topologyOf is status.topology of a reachable member.
func topologyOf(m *round.Member) *valkeyv1.TopologyStatus {
	if m.Self.Primary() {
		return &valkeyv1.TopologyStatus{NodeID: m.ID(), Address: m.Addr, Role: valkeyv1.RolePrimary, Slots: status.Count32(m.Self.SlotCount()), ServerVersion: m.ServerVersion()}
	}
	return &valkeyv1.TopologyStatus{NodeID: m.ID(), Address: m.Addr, Role: valkeyv1.RoleReplica, PrimaryID: m.Self.PrimaryID, ServerVersion: m.ServerVersion()}
}

// memberJoined is ClusterJoined of a reachable member.
func (st *clusterState) memberJoined(m *round.Member) metav1.Condition {
	p := st.Primary[m.Node.Spec.Shard]
	switch {
	case !st.InCluster(m):
		return round.JoinedCondition(false, valkeyv1.ReasonMeeting, "meeting the cluster at "+m.Addr)
	case m.Self.Primary() && (m.Self.SlotCount() > 0 || p == nil || p == m):
		return round.JoinedCondition(true, valkeyv1.ReasonJoined, "primary")
	case m.Self.Primary():
		return round.JoinedCondition(false, valkeyv1.ReasonReplicating, "waiting to replicate "+p.Node.Name)
	case st.Stray(m) && round.Wanted(st.Cluster, m.Node.Spec.Shard, m.Node.Spec.ReplicaIndex):
		o := st.ByID[m.Self.PrimaryID]
		return round.JoinedCondition(false, valkeyv1.ReasonReplicating, fmt.Sprintf("follows %s (%s), of shard %d: waiting to follow its own shard's primary", o.Node.Name, round.ShortID(o.ID()), o.Node.Spec.Shard))
	case m.LinkUp():
		return round.JoinedCondition(true, valkeyv1.ReasonJoined, "replica of "+round.ShortID(m.Self.PrimaryID))
	default:
		return round.JoinedCondition(false, valkeyv1.ReasonReplicating, "syncing with its primary "+round.ShortID(m.Self.PrimaryID))
	}
}

// applyStatus writes the topology status of every node and the ValkeyCluster status: the
// one place where a round's outcome is written.
func (r *Reconciler) applyStatus(ctx context.Context, st *clusterState) error {
	var errs []error
	for _, n := range st.Nodes {
		if err := r.Status.ApplyNode(ctx, n, r.nodeShare(st, n)); err != nil && !isNotFound(err) {
			errs = append(errs, err)
		}
	}
	facts := factsOf(st)
	facts.failoversStalled = r.failovers.AllStalled(st.State)
	cst := summarize(facts)
	if st.tlsReady != nil {
		cst.Conditions = append(cst.Conditions, *st.tlsReady)
	}
	if st.usersApplied != nil {
		cst.Conditions = append(cst.Conditions, *st.usersApplied)
	}
	if c := st.backups.Restored(); c != nil {
		cst.Conditions = append(cst.Conditions, *c)
	}
	if st.headroom != nil {
		cst.Conditions = append(cst.Conditions, *st.headroom)
	}
	if st.configApplied != nil {
		cst.Conditions = append(cst.Conditions, *st.configApplied)
	}
	if c := r.reportVersionHold(st); c != nil {
		cst.Conditions = append(cst.Conditions, *c)
	}
	if err := r.Status.ApplyCluster(ctx, st.Cluster, cst); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("apply status: %w", err)
	}
	return nil
}

// applyRollOnly writes a node's RollApproved at once (before a failover starts), keeping
// the rest of the topology status as observed.
func (r *Reconciler) applyRollOnly(ctx context.Context, st *clusterState, n *valkeyv1.ValkeyNode, c *metav1.Condition) error {
	st.Roll[n.Name] = c
	return r.Status.ApplyNode(ctx, n, r.nodeShare(st, n))
}

// nodeShare is the topology controller's status of n: ClusterJoined, RollApproved,
// ConfigApplied once its server answered, Drained while n is deleted, status.topology, and a backup's saved point while it needs it.
func (r *Reconciler) nodeShare(st *clusterState, n *valkeyv1.ValkeyNode) status.TopologyShare {
	conds := []metav1.Condition{st.Out[n.Name].Joined, rollApproval(st, n)}
	if c := configApplied(st, n); c != nil {
		conds = append(conds, *c)
	}
	if !n.DeletionTimestamp.IsZero() {
		ok, reason, msg := membership.DrainedStatus(st.State, n)
		conds = append(conds, status.Condition(valkeyv1.ConditionDrained, ok, reason, msg))
	}
	return withSavedPoint(status.TopologyShare{Conditions: conds, Topology: st.Out[n.Name].Topo}, st.backups.SavedPoints()[n.Name])
}

// configApplied is n's ConfigApplied: as decided this round, else as it was.
func configApplied(st *clusterState, n *valkeyv1.ValkeyNode) *metav1.Condition {
	if c := st.config[n.Name]; c != nil {
		return c
	}
	return status.Get(n.Status.Conditions, valkeyv1.ConditionConfigApplied)
}

// rollApproval is n's RollApproved: as decided this round; else an approval written before
// while it holds (same generation, same role: it keeps the generation it was given for);
// else withdrawn when it no longer holds; else the waiting state written before while a roll
// is pending; else NotRequested.
func rollApproval(st *clusterState, n *valkeyv1.ValkeyNode) metav1.Condition {
	if c := st.Roll[n.Name]; c != nil {
		return *c
	}
	cur := status.Get(n.Status.Conditions, valkeyv1.ConditionRollApproved)
	switch {
	case cur != nil && cur.Status == metav1.ConditionTrue:
		if holds, why := roll.ApprovalHolds(st.State, n); !holds {
			return *roll.Condition(false, valkeyv1.ReasonApprovalWithdrawn, why+": deciding again")
		}
		return *cur
	case cur != nil && status.IsTrue(n.Status.Conditions, valkeyv1.ConditionRollPending):
		waiting := *cur
		waiting.ObservedGeneration = 0 // still waiting at the current generation
		return waiting
	}
	return *roll.Condition(false, valkeyv1.ReasonNotRequested, "no roll requested")
}
