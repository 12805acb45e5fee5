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
	o := st.out[n.Name]
	return o != nil && o.joined.Status == metav1.ConditionTrue
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
		if o := st.out[n.Name]; o == nil || o.joined.Status != metav1.ConditionTrue {
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
// not from memory or a possibly stale cache.
func (r *Reconciler) rolls(ctx context.Context, st *clusterState) (bool, error) {
	var pending []*valkeyv1.ValkeyNode
	anyApproved := false
	for _, n := range st.nodes {
		if status.IsTrue(n.Status.Conditions, valkeyv1.ConditionRollApproved) {
			anyApproved = true
		}
		if n.DeletionTimestamp.IsZero() && status.IsCurrentTrue(n, n.Status.Conditions, valkeyv1.ConditionRollPending) &&
			!status.IsTrue(n.Status.Conditions, valkeyv1.ConditionRollApproved) {
			pending = append(pending, n)
		}
	}
	if !anyApproved && len(pending) == 0 {
		return false, nil
	}
	// Fresh from the API: which nodes are approved right now.
	var list valkeyv1.ValkeyNodeList
	if err := r.APIReader.List(ctx, &list, client.InNamespace(st.cluster.Namespace), client.MatchingLabels{valkeyv1.LabelCluster: st.cluster.Name}); err != nil {
		return false, fmt.Errorf("list ValkeyNodes: %w", err)
	}
	active, cleared := 0, false
	for i := range list.Items {
		n := &list.Items[i]
		if !status.IsTrue(n.Status.Conditions, valkeyv1.ConditionRollApproved) {
			continue
		}
		if rollDone(st, n) {
			st.roll[n.Name] = rollCondition(false, valkeyv1.ReasonNotRequested, "roll finished")
			r.event(st, n, corev1.EventTypeNormal, "RollFinished", "Roll", "%s is back and joined after its roll", n.Name)
			cleared = true
			continue
		}
		if !n.DeletionTimestamp.IsZero() {
			continue // a node being deleted does not hold the others back
		}
		active++
	}
	acted := false
	var ready []*valkeyv1.ValkeyNode
	for _, n := range pending {
		if !status.IsTrue(n.Status.Conditions, valkeyv1.ConditionWorkloadReady) {
			st.roll[n.Name] = rollCondition(true, valkeyv1.ReasonApproved, "pod not ready: it serves nothing")
			r.event(st, n, corev1.EventTypeNormal, "RollApproved", "Roll", "roll of %s approved: its pod is not ready", n.Name)
			acted = true
			continue
		}
		ready = append(ready, n)
	}
	if len(ready) == 0 {
		return acted, nil
	}
	waitAll := func(msg string) {
		for _, n := range ready {
			if st.roll[n.Name] == nil {
				st.roll[n.Name] = rollCondition(false, valkeyv1.ReasonWaitingForTurn, msg)
			}
		}
	}
	if active > 0 || cleared {
		// After a clear, the next approval waits for the next round: the clear is written
		// first, so two nodes are never seen approved at once.
		waitAll("another node of the cluster is rolling")
		return acted || cleared, nil
	}
	// Choose the order only once the workload controller has looked at every node's
	// current spec: a replica whose roll is not reported yet must still go first.
	for _, n := range st.nodes {
		c := status.Get(n.Status.Conditions, valkeyv1.ConditionRollPending)
		if n.DeletionTimestamp.IsZero() && (c == nil || c.ObservedGeneration != n.Generation) {
			waitAll("waiting for the workload controller to evaluate " + n.Name)
			return acted, nil
		}
	}
	var cands []RollCandidate
	byName := map[string]*valkeyv1.ValkeyNode{}
	for _, n := range ready {
		m := st.members[n.Name]
		cands = append(cands, RollCandidate{Name: n.Name, Primary: m.reachable() && m.self.primary() && m.self.slotCount() > 0})
		byName[n.Name] = n
	}
	next := RollOrder(cands)[0]
	n := byName[next.Name]
	if next.Primary {
		// A replica whose new template waits for its claim (persistence being enabled)
		// will want a roll too: it goes first, or its primary would be failed over twice.
		for _, o := range st.nodes {
			c := status.Get(o.Status.Conditions, valkeyv1.ConditionRollPending)
			m := st.members[o.Name]
			if o.DeletionTimestamp.IsZero() && c != nil && c.Reason == valkeyv1.ReasonWaitingForVolume &&
				!(m.reachable() && m.self.primary()) {
				waitAll("replicas roll first: waiting for the claim of " + o.Name)
				return acted, nil
			}
		}
	}
	if ok, why := stableFor(st, n.Name); !ok {
		waitAll("waiting for the cluster to settle: " + why)
		return acted, nil
	}
	m := st.members[n.Name]
	switch {
	case !next.Primary:
		st.roll[n.Name] = rollCondition(true, valkeyv1.ReasonApproved, "replica: safe to restart")
		r.event(st, n, corev1.EventTypeNormal, "RollApproved", "Roll", "roll of replica %s approved", n.Name)
	case len(syncedReplicas(st, m)) == 0:
		st.roll[n.Name] = rollCondition(true, valkeyv1.ReasonApprovedNoReplica, "primary without a replica: its slots are unavailable while it restarts")
		r.event(st, n, corev1.EventTypeWarning, "RollWithoutReplica", "Roll", "roll of primary %s approved without a replica: its %d slots are unavailable while it restarts", n.Name, m.self.slotCount())
	default:
		// Tell the world first, then fail over, then approve.
		if err := r.applyRollOnly(ctx, st, n, rollCondition(false, valkeyv1.ReasonFailingOver, "failing over to a replica before the roll")); err != nil {
			return acted, err
		}
		if err := r.failover(ctx, st, m, "roll"); err != nil {
			st.roll[n.Name] = rollCondition(false, valkeyv1.ReasonFailingOver, "failover not done yet: "+err.Error())
			return true, nil
		}
		st.roll[n.Name] = rollCondition(true, valkeyv1.ReasonFailedOver, "failed over to a replica: safe to restart")
		r.event(st, n, corev1.EventTypeNormal, "RollApproved", "Roll", "roll of %s approved after failover", n.Name)
	}
	for _, o := range ready {
		if o != n && st.roll[o.Name] == nil {
			st.roll[o.Name] = rollCondition(false, valkeyv1.ReasonWaitingForTurn, "another node of the cluster is rolling")
		}
	}
	return true, nil
}
