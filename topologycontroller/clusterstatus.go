package topologycontroller

import (
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
	"valkey.io/operator/topologycontroller/planner"
	"valkey.io/operator/topologycontroller/round"
)

// clusterFacts is what the ValkeyCluster status is computed from: one round's findings,
// reduced to plain values (see factsOf and summarize).
type clusterFacts struct {
	shards, replicas int32
	nodes            []nodeFact
	// serving are the wanted shards whose primary owns slots and is joined.
	serving map[int32]bool
	// slots is the number of slots some primary owns in the seed's view.
	slots int
	// formed: every slot was assigned before (the cluster's SlotsAssigned is True, or its
	// Degraded says slots were lost since). Until then unassigned slots are the cluster
	// forming, not a degradation.
	formed bool
	// stateOK: a seed was found and every member in the cluster reports cluster_state ok.
	stateOK bool
	// unreachable describes the slot owners nobody can reach.
	unreachable []string
	// unanswering describes the members that do not answer or are seen failing;
	// withoutReplica the serving shards with no replica in sync (see memberhealth.go).
	unanswering, withoutReplica []string
	migrating                   bool
	// stalled describes the slots whose keys could not move ("" when none).
	stalled  string
	progress []string
	// failoversStalled describes the failovers waiting out a backoff.
	failoversStalled []string
	// policyRefused says why the cluster's NetworkPolicy was refused ("" when it was not).
	policyRefused string
	// serviceRefused says why a Service of the cluster could not be made ("" when none).
	serviceRefused string
	// notOwned names objects of the cluster's names that belong to another.
	notOwned []string
	// largestVolume and grownVolumes are the wanted nodes' volume figures (see
	// volumeFigures).
	largestVolume string
	// versions sums up the versions the servers run (see serverVersions).
	versions     string
	grownVolumes int32
}

// nodeFact is one ValkeyNode as the cluster status sees it.
type nodeFact struct {
	name           string
	shard, replica int32
	wanted         bool // part of the spec and not being deleted
	ready          bool // WorkloadReady and ClusterJoined are True
	rolling        bool // RollPending or RollApproved is True
	rollsNoReplica bool // approved to restart as a primary without a replica
	// lost is the WorkloadReady message of a node whose Kubernetes node is lost (reason
	// NodeNotReady), "" otherwise: such a node is excused from Ready.
	lost string
	// volume describes the node's unhealthy volume (VolumeHealthy=False), "" otherwise.
	volume string
}

// factsOf reduces a round's state to clusterFacts.
func factsOf(st *clusterState) clusterFacts {
	vc := st.Cluster
	f := clusterFacts{
		shards: vc.Spec.Shards, replicas: vc.Spec.Replicas, serving: map[int32]bool{},
		slots: st.AssignedSlots(), stateOK: st.Seed != nil, migrating: st.moves.Found().Migrating, progress: st.Progress,
		stalled: st.moves.Found().Stalled, policyRefused: st.policyRefused, serviceRefused: st.serviceRefused, notOwned: st.notOwned, formed: formedBefore(vc),
	}
	for _, n := range st.Nodes {
		approval := rollApproval(st, n)
		f.nodes = append(f.nodes, nodeFact{
			name: n.Name, shard: n.Spec.Shard, replica: n.Spec.ReplicaIndex,
			wanted: n.DeletionTimestamp.IsZero() && round.Wanted(vc, n.Spec.Shard, n.Spec.ReplicaIndex),
			ready:  status.IsTrue(n.Status.Conditions, valkeyv1.ConditionWorkloadReady) && st.Joined(n),
			rolling: status.IsTrue(n.Status.Conditions, valkeyv1.ConditionRollPending) ||
				status.IsTrue(n.Status.Conditions, valkeyv1.ConditionRollApproved),
			rollsNoReplica: approval.Status == metav1.ConditionTrue && approval.Reason == valkeyv1.ReasonApprovedNoReplica,
			lost:           lostMessage(n),
			volume:         volumeFinding(n),
		})
	}
	if f.formed {
		f.unanswering, f.withoutReplica = unansweringMembers(st), shardsWithoutReplica(st)
	}
	f.versions = round.ServerVersions(st.State)
	f.largestVolume, f.grownVolumes = volumeFigures(st.Nodes, func(n *valkeyv1.ValkeyNode) bool {
		return n.DeletionTimestamp.IsZero() && round.Wanted(vc, n.Spec.Shard, n.Spec.ReplicaIndex)
	})
	for s := int32(0); s < vc.Spec.Shards; s++ {
		if p := st.Primary[s]; p != nil && p.Self.SlotCount() > 0 && st.Joined(p.Node) {
			f.serving[s] = true
		}
	}
	for _, m := range st.SortedMembers() {
		if m.ClusterState != "ok" && st.InCluster(m) {
			f.stateOK = false
		}
	}
	for id, n := range st.View {
		if n.Primary() && n.SlotCount() > 0 && st.ByID[id] == nil {
			f.unreachable = append(f.unreachable, fmt.Sprintf("node %s owns %d slots and is unreachable", round.ShortID(id), n.SlotCount()))
		}
	}
	return f
}

// formedBefore tells whether vc's status says every slot was assigned before: SlotsAssigned
// is True, or Degraded says slots were lost since.
func formedBefore(vc *valkeyv1.ValkeyCluster) bool {
	d := status.Get(vc.Status.Conditions, valkeyv1.ConditionDegraded)
	return status.IsTrue(vc.Status.Conditions, valkeyv1.ConditionSlotsAssigned) || (d != nil && d.Reason == valkeyv1.ReasonSlotsUnassigned)
}

// lostMessage is the WorkloadReady message of a node whose Kubernetes node is lost, ""
// when WorkloadReady says anything else.
func lostMessage(n *valkeyv1.ValkeyNode) string {
	c := status.Get(n.Status.Conditions, valkeyv1.ConditionWorkloadReady)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != valkeyv1.ReasonNodeNotReady {
		return ""
	}
	if c.Message == "" {
		return "its Kubernetes node is not ready"
	}
	return c.Message
}

// summarize computes the ValkeyCluster status (conditions and counters) from the facts.
func summarize(f clusterFacts) valkeyv1.ValkeyClusterStatus {
	desired := int(f.shards * (1 + f.replicas))
	readyNodes, lostNodes, readyByShard := 0, 0, map[int32]int{}
	for _, n := range f.nodes {
		switch {
		case n.ready:
			readyNodes++
			if n.wanted {
				readyByShard[n.shard]++
			}
		case n.wanted && n.lost != "":
			lostNodes++
		}
	}
	readyShards := 0
	for s := range f.serving {
		if readyByShard[s] == int(1+f.replicas) {
			readyShards++
		}
	}
	// Nodes on lost Kubernetes nodes are excused: the cluster is ready on the survivors
	// while every shard's reachable primary serves its slots.
	ready := readyNodes+lostNodes == desired && len(f.nodes) == desired && f.slots == planner.TotalSlots && f.stateOK &&
		len(f.serving) == int(f.shards) && (lostNodes > 0 || readyShards == int(f.shards)) && !f.migrating && f.stalled == ""
	rreason, msg := valkeyv1.ReasonReady, fmt.Sprintf("%d/%d nodes ready, %d/%d shards ready, %d/%d slots assigned",
		readyNodes, desired, readyShards, f.shards, f.slots, planner.TotalSlots)
	if !ready {
		rreason = valkeyv1.ReasonNotReady
	} else if lostNodes > 0 {
		msg += fmt.Sprintf("; ready on the survivors (lost Kubernetes nodes hold %d of its nodes)", lostNodes)
	}
	return valkeyv1.ValkeyClusterStatus{
		Conditions: []metav1.Condition{
			status.Condition(valkeyv1.ConditionReady, ready, rreason, msg),
			progressing(f, desired),
			degraded(f),
			slotsAssigned(f.slots),
		},
		Shards: status.Count32(len(f.serving)), ReadyShards: status.Count32(readyShards), Nodes: status.Count32(len(f.nodes)),
		ReadyNodes: status.Count32(readyNodes), SlotsAssigned: status.Count32(f.slots),
		LargestVolume: f.largestVolume, GrownVolumes: f.grownVolumes, ServerVersions: f.versions,
	}
}

// refusals are the cluster's objects not kept as wanted, most important first.
func refusals(f clusterFacts) []string {
	var out []string
	for _, r := range []string{f.policyRefused, f.serviceRefused} {
		if r != "" {
			out = append(out, r)
		}
	}
	return append(out, f.notOwned...)
}

// progressing is the Progressing condition: the work under way, by its kind.
func progressing(f clusterFacts, desired int) metav1.Condition {
	on, reason := len(f.progress) > 0, valkeyv1.ReasonForming
	msg := strings.Join(append(append([]string(nil), f.failoversStalled...), f.progress...), "; ")
	if refused := refusals(f); len(refused) > 0 {
		// Every object not kept is named, so that each one's Warning event is sent once.
		msg = strings.Join(append(refused, msg), "; ")
	}
	switch {
	case f.policyRefused != "":
		on, reason = true, valkeyv1.ReasonNetworkPolicyRefused
	case f.serviceRefused != "":
		on, reason = true, valkeyv1.ReasonServiceRefused
	case len(f.notOwned) > 0:
		on, reason = true, valkeyv1.ReasonObjectNotOwned
	case f.stalled != "":
		on, reason, msg = true, valkeyv1.ReasonMigrationStalled, f.stalled+"; "+msg
	case len(f.failoversStalled) > 0:
		on, reason = true, valkeyv1.ReasonFailoverBackoff
	case f.migrating:
		reason = valkeyv1.ReasonMigratingSlots
	case len(f.nodes) != desired:
		on, reason = true, valkeyv1.ReasonScaling
	case anyRolling(f.nodes):
		on, reason = true, valkeyv1.ReasonRolling
	case !on:
		reason = valkeyv1.ReasonSettled
	}
	if !on {
		msg = "nothing to do"
	}
	return status.Condition(valkeyv1.ConditionProgressing, on, reason, truncate(msg, 1000))
}

func anyRolling(nodes []nodeFact) bool {
	for _, n := range nodes {
		if n.rolling {
			return true
		}
	}
	return false
}

// degraded is the Degraded condition: which slots are not served, and why, which nodes
// are on lost Kubernetes nodes, which members do not answer, which shards have no replica
// in sync, and which volumes are unhealthy. The reason is that of the last finding (a
// restart without a replica, then cluster_state, then unassigned slots, then an
// unreachable owner, then lost nodes, then members that do not answer, then shards
// without a replica, then unhealthy volumes). Until every slot was
// first assigned, unassigned slots are the cluster forming: False with reason Forming.
func degraded(f clusterFacts) metav1.Condition {
	var why []string
	reason := valkeyv1.ReasonHealthy
	if v := volumeFindings(f.nodes); v != "" {
		why, reason = append(why, v), valkeyv1.ReasonVolumeUnhealthy
	}
	if len(f.withoutReplica) > 0 {
		why, reason = append(why, f.withoutReplica...), valkeyv1.ReasonReplicasMissing
	}
	if len(f.unanswering) > 0 {
		why, reason = append(why, f.unanswering...), valkeyv1.ReasonMembersUnreachable
	}
	for _, n := range f.nodes {
		if n.wanted && !n.ready && n.lost != "" {
			why, reason = append(why, n.name+" is on a lost Kubernetes node: "+n.lost), valkeyv1.ReasonNodesLost
		}
	}
	if len(f.unreachable) > 0 {
		why, reason = append(why, f.unreachable...), valkeyv1.ReasonSlotsUnavailable
	}
	if f.slots < planner.TotalSlots && f.formed {
		why, reason = append(why, fmt.Sprintf("%d of 16384 slots are not assigned", planner.TotalSlots-f.slots)), valkeyv1.ReasonSlotsUnassigned
	}
	if f.slots == planner.TotalSlots && !f.stateOK {
		why, reason = append(why, "some node reports cluster_state other than ok"), valkeyv1.ReasonClusterStateFail
	}
	for _, n := range f.nodes {
		if n.rollsNoReplica {
			why, reason = append(why, n.name+" restarts without a replica: its slots are unavailable"), valkeyv1.ReasonNoReplicaRoll
		}
	}
	sort.Strings(why)
	msg := strings.Join(why, "; ")
	switch {
	case len(why) == 0 && f.slots < planner.TotalSlots:
		reason, msg = valkeyv1.ReasonForming, fmt.Sprintf("forming: %d of 16384 slots are assigned", f.slots)
	case len(why) == 0:
		msg = "every slot is served"
	}
	return status.Condition(valkeyv1.ConditionDegraded, len(why) > 0, reason, truncate(msg, 1000))
}

func slotsAssigned(slots int) metav1.Condition {
	if slots != planner.TotalSlots {
		return status.Condition(valkeyv1.ConditionSlotsAssigned, false, valkeyv1.ReasonSlotsUnassigned, fmt.Sprintf("%d of 16384 slots are assigned", slots))
	}
	return status.Condition(valkeyv1.ConditionSlotsAssigned, true, valkeyv1.ReasonAllSlotsAssigned, "all 16384 slots are assigned")
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
