package topologycontroller

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// RollCandidate is a node waiting for roll approval.
type RollCandidate struct {
	Name string
	// Primary is true for a primary that owns slots (it is failed over before it rolls).
	Primary bool
}

// RollOrder orders the nodes waiting for a roll: replicas (and primaries without slots)
// first, then primaries, each by name.
func RollOrder(cs []RollCandidate) []RollCandidate {
	out := append([]RollCandidate(nil), cs...)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Primary != out[j].Primary {
			return !out[i].Primary
		}
		return out[i].Name < out[j].Name
	})
	return out
}

func rollCondition(ok bool, reason, msg string) *metav1.Condition {
	c := status.Condition(valkeyv1.ConditionRollApproved, ok, reason, msg)
	return &c
}

// rollDone tells whether an approved node is back: its roll is no longer pending, its pod is
// ready at the current generation, and it is joined again (a replica in sync).
func rollDone(st *clusterState, n *valkeyv1.ValkeyNode) bool {
	if status.IsTrue(n.Status.Conditions, valkeyv1.ConditionRollPending) {
		return false
	}
	if !status.IsCurrentTrue(n, n.Status.Conditions, valkeyv1.ConditionWorkloadReady) {
		return false
	}
	return st.joined(n)
}

// stableFor tells whether every node but skip is joined and ready and the slots are settled:
// the only time a ready node may be taken down.
func stableFor(st *clusterState, skip string) (bool, string) {
	for _, n := range st.nodes {
		if n.Name == skip {
			continue
		}
		if !n.DeletionTimestamp.IsZero() || !wanted(st.cluster, n.Spec.Shard, n.Spec.ReplicaIndex) {
			return false, "nodes are being removed"
		}
		if !status.IsTrue(n.Status.Conditions, valkeyv1.ConditionWorkloadReady) {
			return false, n.Name + " is not ready"
		}
		if !st.joined(n) {
			return false, n.Name + " is not joined"
		}
		if m := st.members[n.Name]; m.reachable() && m.state != "ok" {
			return false, n.Name + " reports cluster_state " + m.state
		}
	}
	if st.migrating || assignedSlots(st) != TotalSlots {
		return false, "slots are moving"
	}
	for id, v := range st.view {
		if v.primary() && v.slotCount() > 0 && st.byID[id] == nil {
			return false, "node " + short8(id) + " owns slots and is unreachable"
		}
	}
	return true, ""
}

// rolls approves pod rolls: at most one ready node per cluster at a time, replicas first,
// a primary only after its most up-to-date replica took over; a node whose pod is not
// ready serves nothing and is approved at once. Approvals are counted from the API server,
// not from memory or a possibly stale cache. Steps: clear finished rolls, approve the pods
// that are not ready, pick the next node, hand it over.
func (r *Reconciler) rolls(ctx context.Context, st *clusterState) (bool, error) {
	pending, anyApproved := rollRequests(st)
	if !anyApproved && len(pending) == 0 {
		return false, nil
	}
	active, cleared, err := r.clearFinishedRolls(ctx, st)
	if err != nil {
		return false, err
	}
	ready, acted := r.approveNotReady(st, pending)
	if len(ready) == 0 {
		return acted, nil
	}
	if active > 0 || cleared {
		// After a clear, the next approval waits for the next round: the clear is written
		// first, so two nodes are never seen approved at once.
		waitForTurn(st, ready, "another node of the cluster is rolling")
		return acted || cleared, nil
	}
	next, primary, why := pickNextRoll(st, ready)
	if next == nil {
		waitForTurn(st, ready, why)
		return acted, nil
	}
	if err := r.handOver(ctx, st, next, primary); err != nil {
		return true, err
	}
	waitForTurn(st, ready, "another node of the cluster is rolling")
	return true, nil
}

// rollRequests are the nodes whose roll is pending for their current generation and not
// approved yet; anyApproved tells whether some node (as cached) is approved.
func rollRequests(st *clusterState) (pending []*valkeyv1.ValkeyNode, anyApproved bool) {
	for _, n := range st.nodes {
		if status.IsTrue(n.Status.Conditions, valkeyv1.ConditionRollApproved) {
			anyApproved = true
		}
		if n.DeletionTimestamp.IsZero() && status.IsCurrentTrue(n, n.Status.Conditions, valkeyv1.ConditionRollPending) &&
			!status.IsTrue(n.Status.Conditions, valkeyv1.ConditionRollApproved) {
			pending = append(pending, n)
		}
	}
	return pending, anyApproved
}

// clearFinishedRolls withdraws the approval of nodes that are back from their roll, and
// counts the approved nodes still rolling, fresh from the API server.
func (r *Reconciler) clearFinishedRolls(ctx context.Context, st *clusterState) (active int, cleared bool, err error) {
	var list valkeyv1.ValkeyNodeList
	if err := r.APIReader.List(ctx, &list, client.InNamespace(st.cluster.Namespace), client.MatchingLabels{valkeyv1.LabelCluster: st.cluster.Name}); err != nil {
		return 0, false, fmt.Errorf("list ValkeyNodes: %w", err)
	}
	for i := range list.Items {
		n := &list.Items[i]
		if !status.IsTrue(n.Status.Conditions, valkeyv1.ConditionRollApproved) {
			continue
		}
		if rollDone(st, n) {
			st.roll[n.Name] = rollCondition(false, valkeyv1.ReasonNotRequested, "roll finished")
			r.event(st, n, corev1.EventTypeNormal, valkeyv1.EventRollFinished, "Roll", "%s is back and joined after its roll", n.Name)
			cleared = true
			continue
		}
		if n.DeletionTimestamp.IsZero() {
			active++ // a node being deleted does not hold the others back
		}
	}
	return active, cleared, nil
}

// approveNotReady approves at once the pending nodes whose pod is not ready (they serve
// nothing) and returns the others.
func (r *Reconciler) approveNotReady(st *clusterState, pending []*valkeyv1.ValkeyNode) (ready []*valkeyv1.ValkeyNode, acted bool) {
	for _, n := range pending {
		if status.IsTrue(n.Status.Conditions, valkeyv1.ConditionWorkloadReady) {
			ready = append(ready, n)
			continue
		}
		st.roll[n.Name] = rollCondition(true, valkeyv1.ReasonApproved, "pod not ready: it serves nothing")
		r.event(st, n, corev1.EventTypeNormal, valkeyv1.EventRollApproved, "Roll", "roll of %s approved: its pod is not ready", n.Name)
		acted = true
	}
	return ready, acted
}

// waitForTurn marks the nodes not decided this round as waiting, with why.
func waitForTurn(st *clusterState, nodes []*valkeyv1.ValkeyNode, why string) {
	for _, n := range nodes {
		if st.roll[n.Name] == nil {
			st.roll[n.Name] = rollCondition(false, valkeyv1.ReasonWaitingForTurn, why)
		}
	}
}

// pickNextRoll chooses the node to roll next among ready ones (replicas first) and whether
// it is a primary that owns slots; nil with the reason when none may go now.
func pickNextRoll(st *clusterState, ready []*valkeyv1.ValkeyNode) (*valkeyv1.ValkeyNode, bool, string) {
	// Choose the order only once the workload controller has looked at every node's
	// current spec: a replica whose roll is not reported yet must still go first.
	for _, n := range st.nodes {
		c := status.Get(n.Status.Conditions, valkeyv1.ConditionRollPending)
		if n.DeletionTimestamp.IsZero() && (c == nil || c.ObservedGeneration != n.Generation) {
			return nil, false, "waiting for the workload controller to evaluate " + n.Name
		}
	}
	cands := make([]RollCandidate, 0, len(ready))
	byName := map[string]*valkeyv1.ValkeyNode{}
	for _, n := range ready {
		m := st.members[n.Name]
		cands = append(cands, RollCandidate{Name: n.Name, Primary: m.reachable() && m.self.primary() && m.self.slotCount() > 0})
		byName[n.Name] = n
	}
	next := RollOrder(cands)[0]
	if next.Primary {
		if o := replicaWaitingForVolume(st); o != nil {
			return nil, false, "replicas roll first: waiting for the claim of " + o.Name
		}
	}
	if ok, why := stableFor(st, next.Name); !ok {
		return nil, false, "waiting for the cluster to settle: " + why
	}
	return byName[next.Name], next.Primary, ""
}

// replicaWaitingForVolume is a node (not a primary) whose new template waits for its claim
// (persistence being enabled): it will want a roll too and goes before any primary, or
// that primary would be failed over twice.
func replicaWaitingForVolume(st *clusterState) *valkeyv1.ValkeyNode {
	for _, o := range st.nodes {
		c := status.Get(o.Status.Conditions, valkeyv1.ConditionRollPending)
		m := st.members[o.Name]
		if o.DeletionTimestamp.IsZero() && c != nil && c.Reason == valkeyv1.ReasonWaitingForVolume &&
			!(m.reachable() && m.self.primary()) {
			return o
		}
	}
	return nil
}

// handOver approves n's roll: a replica at once; a primary without a synced replica with a
// warning (its slots are unavailable while it restarts); any other primary after its most
// up-to-date replica took over.
func (r *Reconciler) handOver(ctx context.Context, st *clusterState, n *valkeyv1.ValkeyNode, primary bool) error {
	m := st.members[n.Name]
	switch {
	case !primary:
		st.roll[n.Name] = rollCondition(true, valkeyv1.ReasonApproved, "replica: safe to restart")
		r.event(st, n, corev1.EventTypeNormal, valkeyv1.EventRollApproved, "Roll", "roll of replica %s approved", n.Name)
	case len(syncedReplicas(st, m)) == 0:
		st.roll[n.Name] = rollCondition(true, valkeyv1.ReasonApprovedNoReplica, "primary without a replica: its slots are unavailable while it restarts")
		r.event(st, n, corev1.EventTypeWarning, valkeyv1.EventRollWithoutReplica, "Roll", "roll of primary %s approved without a replica: its %d slots are unavailable while it restarts", n.Name, m.self.slotCount())
	default:
		// Tell the world first, then fail over, then approve.
		if err := r.applyRollOnly(ctx, st, n, rollCondition(false, valkeyv1.ReasonFailingOver, "failing over to a replica before the roll")); err != nil {
			return err
		}
		if err := r.failover(ctx, st, m, "roll"); err != nil {
			st.roll[n.Name] = rollCondition(false, valkeyv1.ReasonFailingOver, "failover not done yet: "+err.Error())
			return nil
		}
		st.roll[n.Name] = rollCondition(true, valkeyv1.ReasonFailedOver, "failed over to a replica: safe to restart")
		r.event(st, n, corev1.EventTypeNormal, valkeyv1.EventRollApproved, "Roll", "roll of %s approved after failover", n.Name)
	}
	return nil
}
