package topologycontroller

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// Reasons of the ValkeyCluster conditions.
const (
	ReasonClusterReady    = "Ready"
	ReasonNotReady        = "NotReady"
	ReasonSettled         = "Settled"
	ReasonForming         = "Forming"
	ReasonMigrating       = "MigratingSlots"
	ReasonScaling         = "Scaling"
	ReasonRolling         = "Rolling"
	ReasonHealthy         = "Healthy"
	ReasonSlotsDown       = "SlotsUnavailable"
	ReasonNoReplicaRoll   = "PrimaryRollingWithoutReplica"
	ReasonClusterFail     = "ClusterStateFail"
	ReasonAllSlots        = "AllSlotsAssigned"
	ReasonSlotsUnassigned = "SlotsUnassigned"
)

// computeJoined decides ClusterJoined and status.topology of every node from what the
// servers said this round.
func computeJoined(st *clusterState) {
	for _, n := range st.nodes {
		o := &nodeStatus{topo: n.Status.Topology.DeepCopy()}
		st.out[n.Name] = o
		m := st.members[n.Name]
		switch {
		case m == nil:
			o.joined = status.Condition(valkeyv1.ConditionClusterJoined, false, valkeyv1.ReasonWaitingForWorkload, "waiting for the node's pod to be ready")
			continue
		case !m.reachable():
			o.joined = status.Condition(valkeyv1.ConditionClusterJoined, false, valkeyv1.ReasonWaitingForWorkload, fmt.Sprintf("cannot reach the server at %s", m.addr))
			continue
		}
		t := &valkeyv1.TopologyStatus{NodeID: m.id(), Address: m.addr, Role: valkeyv1.RoleReplica, PrimaryID: m.self.PrimaryID}
		if m.self.primary() {
			t.Role, t.PrimaryID, t.Slots = valkeyv1.RolePrimary, "", int32(m.self.slotCount())
		}
		o.topo = t
		p := st.primary[n.Spec.Shard]
		switch {
		case !st.inCluster(m):
			o.joined = status.Condition(valkeyv1.ConditionClusterJoined, false, valkeyv1.ReasonMeeting, "meeting the cluster at "+m.addr)
		case m.self.primary() && (m.self.slotCount() > 0 || p == nil || p == m):
			o.joined = status.Condition(valkeyv1.ConditionClusterJoined, true, valkeyv1.ReasonJoined, "primary")
		case m.self.primary():
			o.joined = status.Condition(valkeyv1.ConditionClusterJoined, false, valkeyv1.ReasonReplicating, "waiting to replicate "+p.node.Name)
		case m.linkUp():
			o.joined = status.Condition(valkeyv1.ConditionClusterJoined, true, valkeyv1.ReasonJoined, "replica of "+short8(m.self.PrimaryID))
		default:
			o.joined = status.Condition(valkeyv1.ConditionClusterJoined, false, valkeyv1.ReasonReplicating, "syncing with its primary "+short8(m.self.PrimaryID))
		}
	}
}

// assignedSlots is the number of slots some primary owns in the seed's view.
func assignedSlots(st *clusterState) int {
	total := 0
	for _, n := range st.view {
		if n.primary() {
			total += n.slotCount()
		}
	}
	return total
}

// applyStatus writes the topology status of every node and the ValkeyCluster status.
func (r *Reconciler) applyStatus(ctx context.Context, st *clusterState) error {
	var errs []string
	for _, n := range st.nodes {
		conds := r.nodeConditions(st, n)
		o := st.out[n.Name]
		if sameConditions(n.Status.Conditions, conds) && equality.Semantic.DeepEqual(n.Status.Topology, o.topo) && n.Status.Conditions != nil && sameGeneration(n, conds) {
			continue
		}
		if err := r.status.Apply(ctx, n, n.Status.Conditions, status.Status{Conditions: conds, Fields: map[string]any{"topology": o.topo}}); err != nil && !isNotFound(err) {
			errs = append(errs, err.Error())
		}
	}
	if err := r.applyClusterStatus(ctx, st); err != nil {
		errs = append(errs, err.Error())
	}
	if len(errs) > 0 {
		return fmt.Errorf("apply status: %s", strings.Join(errs, "; "))
	}
	return nil
}

// nodeConditions are the conditions the topology controller owns on n.
func (r *Reconciler) nodeConditions(st *clusterState, n *valkeyv1.ValkeyNode) []metav1.Condition {
	conds := []metav1.Condition{st.out[n.Name].joined}
	roll := st.roll[n.Name]
	if roll == nil {
		if cur := status.Get(n.Status.Conditions, valkeyv1.ConditionRollApproved); cur != nil {
			c := *cur
			roll = &c
		} else {
			roll = rollCondition(false, valkeyv1.ReasonNotRequested, "no roll requested")
		}
	}
	if roll.Status != metav1.ConditionTrue && !status.IsTrue(n.Status.Conditions, valkeyv1.ConditionRollPending) && st.roll[n.Name] == nil {
		roll = rollCondition(false, valkeyv1.ReasonNotRequested, "no roll requested")
	}
	conds = append(conds, *roll)
	if !n.DeletionTimestamp.IsZero() {
		ok, reason, msg := drainedStatus(st, n)
		conds = append(conds, status.Condition(valkeyv1.ConditionDrained, ok, reason, msg))
	}
	return conds
}

// applyRollOnly writes a node's RollApproved at once (before a failover starts), keeping
// the rest of the topology status as observed.
func (r *Reconciler) applyRollOnly(ctx context.Context, st *clusterState, n *valkeyv1.ValkeyNode, c *metav1.Condition) error {
	st.roll[n.Name] = c
	conds := r.nodeConditions(st, n)
	return r.status.Apply(ctx, n, n.Status.Conditions, status.Status{Conditions: conds, Fields: map[string]any{"topology": st.out[n.Name].topo}})
}

func sameConditions(cur, want []metav1.Condition) bool {
	owned := 0
	for _, c := range cur {
		switch c.Type {
		case valkeyv1.ConditionClusterJoined, valkeyv1.ConditionRollApproved, valkeyv1.ConditionDrained:
			owned++
		}
	}
	if owned != len(want) {
		return false
	}
	for _, w := range want {
		c := status.Get(cur, w.Type)
		if c == nil || c.Status != w.Status || c.Reason != w.Reason || c.Message != w.Message {
			return false
		}
	}
	return true
}

func sameGeneration(n *valkeyv1.ValkeyNode, want []metav1.Condition) bool {
	for _, w := range want {
		if c := status.Get(n.Status.Conditions, w.Type); c == nil || c.ObservedGeneration != n.Generation {
			return false
		}
	}
	return true
}

// applyClusterStatus writes the ValkeyCluster status.
func (r *Reconciler) applyClusterStatus(ctx context.Context, st *clusterState) error {
	vc := st.cluster
	desired := int(vc.Spec.Shards * (1 + vc.Spec.Replicas))
	readyNodes := 0
	readyByShard := map[int32]int{}
	for _, n := range st.nodes {
		if status.IsTrue(n.Status.Conditions, valkeyv1.ConditionWorkloadReady) && st.out[n.Name].joined.Status == metav1.ConditionTrue {
			readyNodes++
			if n.DeletionTimestamp.IsZero() && wanted(vc, n.Spec.Shard, n.Spec.ReplicaIndex) {
				readyByShard[n.Spec.Shard]++
			}
		}
	}
	shards, readyShards := 0, 0
	for s := int32(0); s < vc.Spec.Shards; s++ {
		p := st.primary[s]
		if p == nil || p.self.slotCount() == 0 || st.out[p.node.Name].joined.Status != metav1.ConditionTrue {
			continue
		}
		shards++
		if readyByShard[s] == int(1+vc.Spec.Replicas) {
			readyShards++
		}
	}
	slots := assignedSlots(st)
	stateOK := st.seed != nil
	for _, m := range st.sortedMembers() {
		if m.state != "ok" && st.inCluster(m) {
			stateOK = false
		}
	}

	var degraded []string
	reason := ReasonHealthy
	for id, n := range st.view {
		if n.primary() && n.slotCount() > 0 && st.byID[id] == nil {
			degraded, reason = append(degraded, fmt.Sprintf("node %s owns %d slots and is unreachable", short8(id), n.slotCount())), ReasonSlotsDown
		}
	}
	if slots == TotalSlots && !stateOK {
		degraded, reason = append(degraded, "some node reports cluster_state other than ok"), ReasonClusterFail
	}
	for _, n := range st.nodes {
		c := st.roll[n.Name]
		if c == nil {
			c = status.Get(n.Status.Conditions, valkeyv1.ConditionRollApproved)
		}
		if c != nil && c.Status == metav1.ConditionTrue && c.Reason == valkeyv1.ReasonApprovedNoReplica {
			degraded, reason = append(degraded, n.Name+" restarts without a replica: its slots are unavailable"), ReasonNoReplicaRoll
		}
	}

	progressing, preason := len(st.progress) > 0, ReasonForming
	switch {
	case st.migrating:
		preason = ReasonMigrating
	case len(st.nodes) != desired:
		progressing, preason = true, ReasonScaling
	case anyRolling(st):
		progressing, preason = true, ReasonRolling
	case !progressing:
		preason = ReasonSettled
	}
	pmsg := strings.Join(st.progress, "; ")
	if !progressing {
		pmsg = "nothing to do"
	}

	ready := readyNodes == desired && len(st.nodes) == desired && slots == TotalSlots && stateOK && readyShards == int(vc.Spec.Shards) && !st.migrating
	rmsg := fmt.Sprintf("%d/%d nodes ready, %d/%d shards ready, %d/%d slots assigned", readyNodes, desired, readyShards, vc.Spec.Shards, slots, TotalSlots)
	rreason := ReasonClusterReady
	if !ready {
		rreason = ReasonNotReady
	}
	sreason, smsg := ReasonAllSlots, "all 16384 slots are assigned"
	if slots != TotalSlots {
		sreason, smsg = ReasonSlotsUnassigned, fmt.Sprintf("%d of 16384 slots are assigned", slots)
	}
	sort.Strings(degraded)
	dmsg := strings.Join(degraded, "; ")
	if len(degraded) == 0 {
		dmsg = "every slot is served"
	}
	conds := []metav1.Condition{
		status.Condition(valkeyv1.ConditionReady, ready, rreason, rmsg),
		status.Condition(valkeyv1.ConditionProgressing, progressing, preason, truncate(pmsg, 1000)),
		status.Condition(valkeyv1.ConditionDegraded, len(degraded) > 0, reason, truncate(dmsg, 1000)),
		status.Condition(valkeyv1.ConditionSlotsAssigned, slots == TotalSlots, sreason, smsg),
	}
	return r.writeClusterStatus(ctx, vc, conds, clusterCounts{
		Shards: int32(shards), ReadyShards: int32(readyShards), Nodes: int32(len(st.nodes)),
		ReadyNodes: int32(readyNodes), SlotsAssigned: int32(slots),
	})
}

// clusterCounts are the ValkeyCluster's status counters.
type clusterCounts struct {
	Shards, ReadyShards, Nodes, ReadyNodes, SlotsAssigned int32
}

// writeClusterStatus applies the cluster's conditions and counters for its current
// generation, unless the status already says so.
func (r *Reconciler) writeClusterStatus(ctx context.Context, vc *valkeyv1.ValkeyCluster, conds []metav1.Condition, c clusterCounts) error {
	cur := vc.Status
	if cur.ObservedGeneration == vc.Generation && cur.Shards == c.Shards && cur.ReadyShards == c.ReadyShards &&
		cur.Nodes == c.Nodes && cur.ReadyNodes == c.ReadyNodes && cur.SlotsAssigned == c.SlotsAssigned &&
		sameClusterConditions(cur.Conditions, conds) {
		return nil
	}
	fields := map[string]any{
		"observedGeneration": vc.Generation,
		"shards":             c.Shards,
		"readyShards":        c.ReadyShards,
		"nodes":              c.Nodes,
		"readyNodes":         c.ReadyNodes,
		"slotsAssigned":      c.SlotsAssigned,
	}
	return r.status.Apply(ctx, vc, vc.Status.Conditions, status.Status{Conditions: conds, Fields: fields})
}

func anyRolling(st *clusterState) bool {
	for _, n := range st.nodes {
		if status.IsTrue(n.Status.Conditions, valkeyv1.ConditionRollPending) || status.IsTrue(n.Status.Conditions, valkeyv1.ConditionRollApproved) {
			return true
		}
	}
	return false
}

func sameClusterConditions(cur, want []metav1.Condition) bool {
	if len(cur) != len(want) {
		return false
	}
	for _, w := range want {
		c := status.Get(cur, w.Type)
		if c == nil || c.Status != w.Status || c.Reason != w.Reason || c.Message != w.Message {
			return false
		}
	}
	return true
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// passwordRecheck is how often an unusable password Secret is looked at again.
const passwordRecheck = 10 * time.Second

// reportPassword reports an unusable password Secret: Ready=False with its reason (the other
// conditions and fields stay as last observed), and a Warning event when it is new.
func (r *Reconciler) reportPassword(ctx context.Context, vc *valkeyv1.ValkeyCluster, pe *passwordError) error {
	if cur := status.Get(vc.Status.Conditions, valkeyv1.ConditionReady); cur == nil || cur.Reason != pe.reason || cur.Message != pe.msg {
		r.Recorder.Eventf(vc, nil, corev1.EventTypeWarning, pe.reason, "ReadPassword", "%s", pe.msg)
	}
	conds := []metav1.Condition{status.Condition(valkeyv1.ConditionReady, false, pe.reason, pe.msg)}
	for _, t := range []string{valkeyv1.ConditionProgressing, valkeyv1.ConditionDegraded, valkeyv1.ConditionSlotsAssigned} {
		if c := status.Get(vc.Status.Conditions, t); c != nil {
			conds = append(conds, *c)
		}
	}
	cur := vc.Status
	return r.writeClusterStatus(ctx, vc, conds, clusterCounts{
		Shards: cur.Shards, ReadyShards: cur.ReadyShards, Nodes: cur.Nodes,
		ReadyNodes: cur.ReadyNodes, SlotsAssigned: cur.SlotsAssigned,
	})
}
