package topologycontroller

import (
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/topologycontroller/migration"
	"valkey.io/operator/topologycontroller/planner"
	"valkey.io/operator/topologycontroller/round"
)

// While Valkey converges on its own (a replica syncing with its primary, gossip spreading
// a MEET or new slot owners), nothing in Kubernetes changes to wake the controller: it looks
// again after convergeFirst for convergeSteady rounds (a replica's first sync or a gossip
// round takes a second or two), then after twice as long each round in a row, at most
// convergeMax (and never later than resync-period). Only a converged cluster waits
// resync-period.
const (
	convergeFirst  = round.Short
	convergeSteady = 10
	convergeMax    = 2 * time.Second
)

// convergeBook counts, per ValkeyCluster, the rounds in a row that found Valkey still
// converging; a converged round forgets the cluster. Like the stalled slots of package migration it is kept in memory
// only: a restart starts again at convergeFirst.
type convergeBook struct {
	mu     sync.Mutex
	rounds map[types.UID]int
}

// next records one more converging round of uid and returns how soon to look again.
func (b *convergeBook) next(uid types.UID, limit time.Duration) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.rounds == nil {
		b.rounds = map[types.UID]int{}
	}
	d := convergeFirst << min(max(b.rounds[uid]-convergeSteady, 0), 8)
	b.rounds[uid]++
	return min(d, convergeMax, limit)
}

// forget drops uid: its cluster converged or is gone.
func (b *convergeBook) forget(uid types.UID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.rounds, uid)
}

// lookAgainWhileConverging keeps the round from settling while Valkey is still converging
// (see convergingIn): it is reported in Progressing and looked at again soon; sooner while
// the cluster forms (paceForming).
func (r *Reconciler) lookAgainWhileConverging(st *clusterState) {
	defer paceForming(st)
	why := convergingIn(st)
	if len(why) == 0 {
		r.converging.forget(st.Cluster.UID)
		return
	}
	msg := "waiting for Valkey to converge: " + why[0]
	if len(why) > 1 {
		msg += fmt.Sprintf(" (and %d more)", len(why)-1)
	}
	st.Wait(msg, r.converging.next(st.Cluster.UID, r.Options.ResyncPeriod))
}

// convergingIn describes what Valkey has yet to settle by itself this round: a wanted node
// whose pod is ready but that is not ClusterJoined yet (meeting the cluster, a replica
// whose link to its primary is not up, a server not answering yet; not one kept out because
// its keys exist nowhere else), a primary whose own slots the seed does not show yet (its
// new slots are spreading by gossip), a replica some member still sees as a primary without
// slots (round.ReplicasNotSpread) and, once every slot is assigned, a member that does not
// report cluster_state ok yet. Nodes whose pods are not ready are not listed: their
// WorkloadReady wakes the controller.
func convergingIn(st *clusterState) []string {
	var why []string
	for _, n := range st.Nodes {
		if st.Members[n.Name] == nil || !n.DeletionTimestamp.IsZero() || !round.Wanted(st.Cluster, n.Spec.Shard, n.Spec.ReplicaIndex) {
			continue
		}
		// A node kept out because its keys exist nowhere else waits for the user, not for
		// Valkey (membership.Members.FlushIfHeldElsewhere looks again at its own pace).
		if o := st.Out[n.Name]; o != nil && !st.Joined(n) && o.Joined.Reason != valkeyv1.ReasonKeysNotElsewhere {
			why = append(why, n.Name+": "+o.Joined.Message)
		}
	}
	why = append(why, migration.SlotsNotSpread(st.State)...)
	why = append(why, round.ReplicasNotSpread(st.State)...)
	if st.AssignedSlots() != planner.TotalSlots {
		return why
	}
	for _, m := range st.SortedMembers() {
		if st.InCluster(m) && m.ClusterState != "ok" {
			why = append(why, fmt.Sprintf("%s reports cluster_state %s", m.Node.Name, m.ClusterState))
		}
	}
	return why
}
