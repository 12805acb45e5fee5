package roll

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
	"valkey.io/operator/topologycontroller/failover"
	"valkey.io/operator/topologycontroller/planner"
	"valkey.io/operator/topologycontroller/round"
)

// Condition is a node's RollApproved as this round decides it.
func Condition(ok bool, reason, msg string) *metav1.Condition {
	c := status.Condition(valkeyv1.ConditionRollApproved, ok, reason, msg)
	return &c
}

// rollDone tells whether an approved node is back: its roll is no longer pending, its pod is
// ready at the current generation, and it is joined again (a replica in sync).
func rollDone(st *Round, n *valkeyv1.ValkeyNode) bool {
	if status.IsTrue(n.Status.Conditions, valkeyv1.ConditionRollPending) {
		return false
	}
	if !status.IsCurrentTrue(n, n.Status.Conditions, valkeyv1.ConditionWorkloadReady) {
		return false
	}
	return st.Joined(n)
}

// stableFor tells whether every node but skip is joined and ready and the slots are settled:
// the only time a ready node may be taken down. Slots that skip itself owns while it does
// not answer are not held against it, nor are nodes that have no pod because their claim is
// not ready (they serve nothing; volumeHold decides whether their shard's primary waits).
func stableFor(st *Round, skip *valkeyv1.ValkeyNode) (bool, string) {
	skipID := round.RecordedID(skip)
	if m := st.RollMember(skip); m != nil {
		skipID = m.ID()
	}
	for _, n := range st.Nodes {
		if n.Name == skip.Name {
			continue
		}
		if !n.DeletionTimestamp.IsZero() || !round.Wanted(st.Cluster, n.Spec.Shard, n.Spec.ReplicaIndex) {
			return false, "nodes are being removed"
		}
		if noPodForVolume(n) {
			continue // serves nothing; a slot owner Valkey cannot reach is caught below
		}
		if !status.IsTrue(n.Status.Conditions, valkeyv1.ConditionWorkloadReady) {
			return false, n.Name + " is not ready"
		}
		if !st.Joined(n) {
			return false, n.Name + " is not joined"
		}
		if m := st.Members[n.Name]; m.Reachable() && m.ClusterState != "ok" {
			return false, n.Name + " reports cluster_state " + m.ClusterState
		}
	}
	if st.Migrating || st.AssignedSlots() != planner.TotalSlots {
		return false, "slots are moving"
	}
	for id, v := range st.View {
		if v.Primary() && v.SlotCount() > 0 && st.ByID[id] == nil && id != skipID {
			return false, "node " + round.ShortID(id) + " owns slots and is unreachable"
		}
	}
	return true, ""
}

// Approve approves pod rolls: at most one serving node per cluster at a time, replicas first,
// a primary only after its most up-to-date replica took over. A node whose pod is not ready
// is approved at once only when Valkey does not know it as a primary that owns slots (or
// knows it as failed with no replica to take over); otherwise it takes the same path as a
// ready one. An approval holds only for the generation and the role it was given for.
// Approvals are counted from the API server, not from memory or a possibly stale cache.
// Steps: clear finished and withdraw stale approvals, approve the pods that serve nothing,
// pick the next node, hand it over.
func (ro *Rolls) Approve(ctx context.Context, st *Round) (bool, error) {
	pending, anyApproved := rollRequests(st)
	if !anyApproved && len(pending) == 0 {
		return false, nil
	}
	active, cleared, err := ro.clearFinishedRolls(ctx, st)
	if err != nil {
		return false, err
	}
	serving, acted := ro.approveNotServing(ctx, st, pending)
	if len(serving) == 0 {
		return acted || cleared, nil
	}
	if active > 0 || cleared {
		// After a clear, the next approval waits for the next round: the clear is written
		// first, so two nodes are never seen approved at once.
		waitForTurn(st, serving, "another node of the cluster is rolling")
		return acted || cleared, nil
	}
	next, primary, why := ro.pickNextRoll(ctx, st, serving)
	if next == nil {
		waitForTurn(st, serving, why)
		return acted, nil
	}
	if err := ro.handOver(ctx, st, next, primary); err != nil {
		return true, err
	}
	waitForTurn(st, serving, "another node of the cluster is rolling")
	return true, nil
}

// rollRequests are the nodes whose roll is pending for their current generation and not
// approved, or approved for another generation or role; anyApproved tells whether some
// node (as cached) is approved.
func rollRequests(st *Round) (pending []*valkeyv1.ValkeyNode, anyApproved bool) {
	for _, n := range st.Nodes {
		if status.IsTrue(n.Status.Conditions, valkeyv1.ConditionRollApproved) {
			anyApproved = true
		}
		if holds, _ := ApprovalHolds(st.State, n); n.DeletionTimestamp.IsZero() && !holds &&
			status.IsCurrentTrue(n, n.Status.Conditions, valkeyv1.ConditionRollPending) {
			pending = append(pending, n)
		}
	}
	return pending, anyApproved
}

// ApprovalHolds tells whether n's RollApproved=True still holds: it was given for n's
// current generation and, until the workload applies the template, for the role n has now.
// The reason names that role: ApprovedWithoutReplica a primary that owns slots; Approved
// and FailedOver a node that owns none. why says what changed when it does not hold.
func ApprovalHolds(st *round.State, n *valkeyv1.ValkeyNode) (holds bool, why string) {
	c := status.Get(n.Status.Conditions, valkeyv1.ConditionRollApproved)
	if c == nil || c.Status != metav1.ConditionTrue {
		return false, ""
	}
	if c.ObservedGeneration != n.Generation {
		return false, fmt.Sprintf("approved for generation %d; the node is at generation %d now", c.ObservedGeneration, n.Generation)
	}
	if p := status.Get(n.Status.Conditions, valkeyv1.ConditionRollPending); p != nil && p.Reason == valkeyv1.ReasonRolling {
		return true, "" // applied: the approval is spent
	}
	serves, known := st.ServesSlots(n)
	if asPrimary := c.Reason == valkeyv1.ReasonApprovedNoReplica; known && serves != asPrimary {
		return false, fmt.Sprintf("approved (%s) as %s; it is %s now", c.Reason, roleWord(asPrimary), roleWord(serves))
	}
	return true, ""
}

func roleWord(servesSlots bool) string {
	if servesSlots {
		return "a primary that owns slots"
	}
	return "a node that owns no slots"
}

// clearFinishedRolls withdraws the approval of nodes that are back from their roll, or
// whose approval no longer holds, and counts the approved nodes still rolling, fresh from
// the API server.
func (ro *Rolls) clearFinishedRolls(ctx context.Context, st *Round) (active int, cleared bool, err error) {
	var list valkeyv1.ValkeyNodeList
	if err := ro.APIReader.List(ctx, &list, client.InNamespace(st.Cluster.Namespace), client.MatchingLabels{valkeyv1.LabelCluster: st.Cluster.Name}); err != nil {
		return 0, false, fmt.Errorf("list ValkeyNodes: %w", err)
	}
	for i := range list.Items {
		n := &list.Items[i]
		if !status.IsTrue(n.Status.Conditions, valkeyv1.ConditionRollApproved) {
			continue
		}
		if waitsForVolume(n) {
			// Not rolling and not about to: the others do not wait for it.
			st.Roll[n.Name] = Condition(false, valkeyv1.ReasonApprovalWithdrawn, "its claim is not ready: the roll is decided again once it is")
			ro.Event(st.State, n, corev1.EventTypeNormal, valkeyv1.EventRollApprovalWithdrawn, "Roll", "roll approval of %s withdrawn: its claim is not ready", n.Name)
			cleared = true
			continue
		}
		if rollDone(st, n) {
			st.Roll[n.Name] = Condition(false, valkeyv1.ReasonNotRequested, "roll finished")
			ro.Event(st.State, n, corev1.EventTypeNormal, valkeyv1.EventRollFinished, "Roll", "%s is back and joined after its roll", n.Name)
			cleared = true
			continue
		}
		if holds, why := ApprovalHolds(st.State, n); !holds {
			st.Roll[n.Name] = Condition(false, valkeyv1.ReasonApprovalWithdrawn, why+": deciding again")
			ro.Event(st.State, n, corev1.EventTypeNormal, valkeyv1.EventRollApprovalWithdrawn, "Roll", "roll approval of %s withdrawn: %s", n.Name, why)
			cleared = true
			continue
		}
		if n.DeletionTimestamp.IsZero() {
			active++ // a node being deleted does not hold the others back
		}
	}
	return active, cleared, nil
}

// approveNotServing approves at once the pending nodes whose pod is not ready and that
// serve nothing, and returns the others (ready, or known to Valkey as a primary that owns
// slots): they wait for their turn like any other.
func (ro *Rolls) approveNotServing(ctx context.Context, st *Round, pending []*valkeyv1.ValkeyNode) (serving []*valkeyv1.ValkeyNode, acted bool) {
	st.ProbeNotReady(ctx, pending, ro.ValkeyPort)
	for _, n := range pending {
		if status.IsTrue(n.Status.Conditions, valkeyv1.ConditionWorkloadReady) {
			serving = append(serving, n)
			continue
		}
		reason, msg := notServingApproval(st, n)
		if reason == "" {
			serving = append(serving, n)
			continue
		}
		st.Roll[n.Name] = Condition(true, reason, msg)
		eventType := corev1.EventTypeNormal
		if reason == valkeyv1.ReasonApprovedNoReplica {
			eventType = corev1.EventTypeWarning
		}
		ro.Event(st.State, n, eventType, valkeyv1.EventRollApproved, "Roll", "roll of %s approved: %s", n.Name, msg)
		acted = true
	}
	return serving, acted
}

// notServingApproval is the approval reason and message of a node whose pod is not ready,
// when it may roll at once: Valkey does not know it as a primary that owns slots, nothing
// of the cluster answers to tell, or the cluster flags it failed and no replica in sync
// can take over (waiting would not bring its slots back). "" when it must wait its turn.
func notServingApproval(st *Round, n *valkeyv1.ValkeyNode) (reason, msg string) {
	line, _, known := st.ServedBy(n)
	switch {
	case !known:
		return valkeyv1.ReasonApproved, "pod not ready, and neither its server nor any member of the cluster answers"
	case (line == nil || !line.Primary() || line.SlotCount() == 0) && failingOver(n):
		return valkeyv1.ReasonFailedOver, "pod not ready; failed over to a replica: safe to restart"
	case line == nil || !line.Primary() || line.SlotCount() == 0:
		return valkeyv1.ReasonApproved, "pod not ready and not a primary that owns slots: it serves nothing"
	case line.Failed() && len(failover.SyncedReplicas(st.State, st.RollMember(n))) == 0:
		return valkeyv1.ReasonApprovedNoReplica, fmt.Sprintf("pod not ready; the cluster flags it failed and no replica in sync can take over: its %d slots are unavailable until it is back", line.SlotCount())
	}
	return "", ""
}

// waitForTurn marks the nodes not decided this round as waiting, with why.
func waitForTurn(st *Round, nodes []*valkeyv1.ValkeyNode, why string) {
	for _, n := range nodes {
		if st.Roll[n.Name] == nil {
			st.Roll[n.Name] = Condition(false, valkeyv1.ReasonWaitingForTurn, why)
		}
	}
}

// pickNextRoll chooses the node to roll next among serving ones (replicas first) and whether
// it is a primary that owns slots; nil with the reason when none may go now. A primary that
// waits for a node of its shard whose claim is not ready (volumeWait) is passed over, with
// its own reason, so that it holds no other shard.
func (ro *Rolls) pickNextRoll(ctx context.Context, st *Round, serving []*valkeyv1.ValkeyNode) (*valkeyv1.ValkeyNode, bool, string) {
	// Choose the order only once the workload controller has looked at every node's
	// current spec: a replica whose roll is not reported yet must still go first.
	for _, n := range st.Nodes {
		c := status.Get(n.Status.Conditions, valkeyv1.ConditionRollPending)
		if n.DeletionTimestamp.IsZero() && (c == nil || c.ObservedGeneration != n.Generation) {
			return nil, false, "waiting for the workload controller to evaluate " + n.Name
		}
	}
	cands := make([]planner.RollCandidate, 0, len(serving))
	byName := map[string]*valkeyv1.ValkeyNode{}
	for _, n := range serving {
		serves, _ := st.ServesSlots(n)
		cands = append(cands, planner.RollCandidate{Name: n.Name, Primary: serves})
		byName[n.Name] = n
	}
	why := ""
	for _, next := range planner.RollOrder(cands) {
		n := byName[next.Name]
		if next.Primary {
			if wait := requestsSettling(st, time.Now()); wait > 0 {
				msg := "waiting for the roll requests to settle: a replica reported after a primary still goes first"
				st.Wait(msg, wait)
				return nil, false, msg
			}
			if why = ro.volumeWait(ctx, st, n); why != "" {
				st.Roll[n.Name] = Condition(false, valkeyv1.ReasonWaitingForTurn, why)
				continue
			}
		}
		if ok, unstable := stableFor(st, n); !ok {
			msg := "waiting for the cluster to settle: " + unstable
			if next.Primary && !status.IsTrue(n.Status.Conditions, valkeyv1.ConditionWorkloadReady) {
				msg = n.Name + "'s pod is not ready but it is a primary that owns slots (it may still serve): " + msg
			}
			return nil, false, msg
		}
		return n, next.Primary, ""
	}
	return nil, false, why
}

// rollSettle is how long after the newest roll request a primary waits for its turn. The
// workload controller reports the nodes' requests one after another: all of them when an
// operator upgrade changes every template and no generation, so the check of the nodes'
// generations above cannot tell that it has not reached every node yet; a replica
// reported a moment after a primary must still roll first.
const rollSettle = 5 * time.Second

// requestsSettling is how long until rollSettle has passed since the newest roll request
// (RollPending turned True) of the cluster's nodes; 0 when it has.
func requestsSettling(st *Round, now time.Time) time.Duration {
	var newest time.Time
	for _, n := range st.Nodes {
		if c := status.Get(n.Status.Conditions, valkeyv1.ConditionRollPending); c != nil && c.Status == metav1.ConditionTrue && c.LastTransitionTime.After(newest) {
			newest = c.LastTransitionTime.Time
		}
	}
	return max(newest.Add(rollSettle).Sub(now), 0)
}

// handOver approves n's roll: a node that owns no slots at once (reason FailedOver when it
// is the primary failed over for this roll); a primary without a synced replica with a
// warning (its slots are unavailable while it restarts); any other primary after its most
// up-to-date replica took over, which failover starts and a later round sees done.
func (ro *Rolls) handOver(ctx context.Context, st *Round, n *valkeyv1.ValkeyNode, primary bool) error {
	m := st.RollMember(n)
	running := ro.Failovers.Running(st.Cluster.UID, n.Name)
	switch {
	case !primary && failingOver(n):
		st.Roll[n.Name] = Condition(true, valkeyv1.ReasonFailedOver, "failed over to a replica: safe to restart")
		ro.Event(st.State, n, corev1.EventTypeNormal, valkeyv1.EventRollApproved, "Roll", "roll of %s approved after failover", n.Name)
	case !primary:
		st.Roll[n.Name] = Condition(true, valkeyv1.ReasonApproved, "replica: safe to restart")
		ro.Event(st.State, n, corev1.EventTypeNormal, valkeyv1.EventRollApproved, "Roll", "roll of replica %s approved", n.Name)
	case len(failover.SyncedReplicas(st.State, m)) == 0 && !running:
		st.Roll[n.Name] = Condition(true, valkeyv1.ReasonApprovedNoReplica, "primary without a replica: its slots are unavailable while it restarts")
		ro.Event(st.State, n, corev1.EventTypeWarning, valkeyv1.EventRollWithoutReplica, "Roll", "roll of primary %s approved without a replica: its %d slots are unavailable while it restarts", n.Name, m.Self.SlotCount())
	default:
		if stalled, _ := ro.Failovers.Stalled(st.State, n.Name); !running && !stalled {
			// Tell the world first, then start the failover; a later round approves.
			if err := st.ApplyNow(ctx, n, Condition(false, valkeyv1.ReasonFailingOver, "failing over to a replica before the roll")); err != nil {
				return err
			}
		}
		ro.Failovers.Start(ctx, st.State, m, "roll")
		st.Roll[n.Name] = Condition(false, valkeyv1.ReasonFailingOver, "failing over to a replica before the roll")
		if stalled, why := ro.Failovers.Stalled(st.State, n.Name); stalled {
			st.Roll[n.Name] = Condition(false, valkeyv1.ReasonFailoverBackoff, why)
		}
	}
	return nil
}

// failingOver tells whether n's roll waits for (or waited for) a failover of n: a node that
// owns no slots now, after it, is approved with reason FailedOver.
func failingOver(n *valkeyv1.ValkeyNode) bool {
	c := status.Get(n.Status.Conditions, valkeyv1.ConditionRollApproved)
	return c != nil && c.Status == metav1.ConditionFalse && (c.Reason == valkeyv1.ReasonFailingOver || c.Reason == valkeyv1.ReasonFailoverBackoff)
}
