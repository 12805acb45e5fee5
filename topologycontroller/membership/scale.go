package membership

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/topologycontroller/failover"
	"valkey.io/operator/topologycontroller/round"
)

// ScaleIn deletes the ValkeyNodes that are no longer wanted once they own no slots:
// removed shards (replicas before primaries) and extra replicas (highest index first; a
// node that is its shard's primary is failed over to a remaining node first).
func (ms *Members) ScaleIn(ctx context.Context, st *round.State) (bool, error) {
	var extra []*valkeyv1.ValkeyNode
	for _, n := range st.Nodes {
		if n.DeletionTimestamp.IsZero() && !round.Wanted(st.Cluster, n.Spec.Shard, n.Spec.ReplicaIndex) {
			extra = append(extra, n)
		}
	}
	if len(extra) == 0 {
		return false, nil
	}
	shardSize := liveShardSizes(st)
	acted := false
	// Replicas first, highest replica index first.
	for i := len(extra) - 1; i >= 0; i-- {
		n := extra[i]
		removedShard := n.Spec.Shard >= st.Cluster.Spec.Shards
		if m := st.Members[n.Name]; m.Reachable() && m.Self.Primary() && m.Self.SlotCount() > 0 {
			if removedShard || len(failover.SyncedReplicas(st, m)) == 0 {
				continue // the slots phase moves a removed shard's slots away first
			}
			// An extra replica index that is its shard's primary now: fail over first.
			ms.Failovers.Start(ctx, st, m, "scale-in of replicas")
			return true, nil
		}
		if removedShard && !isReplica(st, n) && shardSize[n.Spec.Shard] > 1 {
			continue // the shard's replicas go first
		}
		if !deletable(st, n) {
			continue
		}
		if sp := carriedPoint(n); sp != nil {
			st.Wait(fmt.Sprintf("node %s is removed once the backup %s has its snapshot", n.Name, sp.Backup), time.Second)
			continue
		}
		if err := ms.Client.Delete(ctx, n, client.Preconditions{UID: &n.UID}); err != nil && !apierrors.IsNotFound(err) {
			return acted, fmt.Errorf("delete ValkeyNode %s: %w", n.Name, err)
		}
		shardSize[n.Spec.Shard]--
		ms.Event(st, n, corev1.EventTypeNormal, valkeyv1.EventScaledIn, "DeleteNode", "deleted ValkeyNode %s (no longer in spec, owns no slots)", n.Name)
		acted = true
	}
	if acted {
		st.Wait("removing nodes", time.Second)
	} else {
		st.Wait("draining nodes to remove", time.Second)
	}
	return acted, nil
}

// liveShardSizes counts the nodes of each shard that are not being deleted.
func liveShardSizes(st *round.State) map[int32]int {
	out := map[int32]int{}
	for _, n := range st.Nodes {
		if n.DeletionTimestamp.IsZero() {
			out[n.Spec.Shard]++
		}
	}
	return out
}

// isReplica tells whether n is not a primary (or cannot be reached to tell).
func isReplica(st *round.State, n *valkeyv1.ValkeyNode) bool {
	m := st.Members[n.Name]
	return !m.Reachable() || !m.Self.Primary()
}

// carriedPoint is the saved point n carries for a backup (nil when none): its volume is
// being snapshotted, and the backup learns of the snapshot from n's status.
func carriedPoint(n *valkeyv1.ValkeyNode) *valkeyv1.SavedPoint {
	if n.Status.Topology == nil {
		return nil
	}
	return n.Status.Topology.SavedPoint
}

// deletable tells whether n may be removed: it owns no slots (as it says, or as the seed
// says of its last known ID) and no wanted node follows it.
func deletable(st *round.State, n *valkeyv1.ValkeyNode) bool {
	m := st.Members[n.Name]
	if !m.Reachable() {
		v := st.View[round.RecordedID(n)]
		return v == nil || v.SlotCount() == 0
	}
	if m.Self.SlotCount() > 0 {
		return false
	}
	for _, o := range st.SortedMembers() {
		if o.Self.PrimaryID == m.ID() && round.Wanted(st.Cluster, o.Node.Spec.Shard, o.Node.Spec.ReplicaIndex) {
			return false
		}
	}
	return true
}
