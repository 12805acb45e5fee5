package membership

import (
	"context"
	"fmt"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/topologycontroller/failover"
	"valkey.io/operator/topologycontroller/round"
)

// Drain empties the nodes being deleted: a primary with a synced replica is failed over;
// one without keeps its slots until the slots phase (migration.Mover.Balance) has moved them to the other primaries
// (it is no slot target any more).
func (ms *Members) Drain(ctx context.Context, st *round.State) (bool, error) {
	for _, m := range st.SortedMembers() {
		if !m.Deleting() || !m.Self.Primary() || m.Self.SlotCount() == 0 {
			continue
		}
		if len(failover.SyncedReplicas(st, m)) > 0 || ms.Failovers.Running(st.Cluster.UID, m.Node.Name) {
			ms.Failovers.Start(ctx, st, m, "node deleted")
			return true, nil
		}
	}
	return false, nil
}

// DrainedStatus decides Drained for a node being deleted.
func DrainedStatus(st *round.State, n *valkeyv1.ValkeyNode) (bool, string, string) {
	if m := st.Members[n.Name]; m.Reachable() {
		if c := m.Self.SlotCount(); c > 0 && m.Self.Primary() {
			return false, valkeyv1.ReasonMigratingSlots, fmt.Sprintf("owns %d slots; moving them off", c)
		}
		if id := m.Self.PrimaryID; !m.Self.Primary() && id != "" && st.ByID[id] == nil {
			return false, valkeyv1.ReasonPrimaryDown, fmt.Sprintf("its primary %s is down: this replica may hold the only copy of the shard's keys, "+
				"so it stays until the primary is back or it has taken over (annotation %s lets it go anyway; its copy goes with it)", round.ShortID(id), valkeyv1.AnnotationSkipDrain)
		}
		if st.InCluster(m) || (n.Status.Topology != nil && n.Status.Topology.NodeID != "") {
			return true, valkeyv1.ReasonNoSlots, "owns no slots"
		}
		return true, valkeyv1.ReasonNeverJoined, "never joined the cluster"
	}
	id := ""
	if n.Status.Topology != nil {
		id = n.Status.Topology.NodeID
	}
	if id == "" {
		return true, valkeyv1.ReasonNeverJoined, "never joined the cluster"
	}
	if v := st.View[id]; v != nil && v.Primary() && v.SlotCount() > 0 {
		return false, valkeyv1.ReasonMigratingSlots, fmt.Sprintf("owns %d slots and is unreachable: they cannot move until it is back (annotation %s skips the drain; its slots become unavailable)", v.SlotCount(), valkeyv1.AnnotationSkipDrain)
	}
	if v := st.View[id]; v != nil && !v.Primary() && v.PrimaryID != "" && st.ByID[v.PrimaryID] == nil {
		return false, valkeyv1.ReasonPrimaryDown, fmt.Sprintf("is unreachable and its primary %s is down too: its claim may hold the only copy of the shard's keys, "+
			"so it stays until the primary is back or it has taken over (annotation %s lets it go anyway; its copy goes with it)", round.ShortID(v.PrimaryID), valkeyv1.AnnotationSkipDrain)
	}
	if st.Seed == nil {
		return false, valkeyv1.ReasonMigratingSlots, "no node of the cluster is reachable to check its slots"
	}
	return true, valkeyv1.ReasonNoSlots, "owns no slots"
}
