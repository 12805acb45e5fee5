package topologycontroller

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/topologycontroller/round"
)

// syncedReplicas are the members of p's shard that follow p with their link up, most
// up to date (highest replication offset) first.
func syncedReplicas(st *clusterState, p *round.Member) []*round.Member {
	var out []*round.Member
	for _, m := range st.SortedMembers() {
		if m == p || m.Deleting() || m.Node.Spec.Shard != p.Node.Spec.Shard {
			continue
		}
		if !m.Self.Primary() && m.Self.PrimaryID == p.ID() && m.LinkUp() {
			out = append(out, m)
		}
	}
	sortByOffset(out)
	return out
}

func sortByOffset(ms []*round.Member) {
	for i := 1; i < len(ms); i++ {
		for j := i; j > 0 && round.ReplicationOffset(ms[j].Repl) > round.ReplicationOffset(ms[j-1].Repl); j-- {
			ms[j], ms[j-1] = ms[j-1], ms[j]
		}
	}
}

// failover moves primary p's slots to its most up-to-date synced replica without waiting
// for it: it asks the replica to take over (CLUSTER FAILOVER, which lets it catch up
// first) and returns; later rounds see the roles switched (settleFailovers), or, once
// FailoverTimeout has passed, count the try as failed. A failed try is retried only after
// a backoff that doubles with each failure (FailoverBackoff up to FailoverBackoffMax),
// reported as a Warning event and, by the callers, as reason FailoverBackoff. Running it
// again after an interruption is safe.
func (r *Reconciler) failover(ctx context.Context, st *clusterState, p *round.Member, why string) {
	key := failoverKey{cluster: st.Cluster.UID, node: p.Node.Name}
	t, now := r.failovers.get(key), time.Now()
	switch {
	case t.running() && now.Sub(t.started) < r.Options.FailoverTimeout:
		st.Wait(fmt.Sprintf("failing %s over to %s", p.Node.Name, t.to), time.Second)
		return
	case t.running():
		r.failoverFailed(st, p, fmt.Sprintf("%s did not take over within %s", t.to, r.Options.FailoverTimeout))
		return
	case now.Before(t.retryAt):
		st.Wait("waiting to fail "+p.Node.Name+" over again", t.retryAt.Sub(now))
		return
	}
	replicas := syncedReplicas(st, p)
	if len(replicas) == 0 {
		st.Wait("no synced replica of "+p.Node.Name+" to fail over to", time.Second)
		return
	}
	to := replicas[0]
	r.event(st.State, p.Node, corev1.EventTypeNormal, valkeyv1.EventFailingOver, "ClusterFailover", "failing %s over to %s (%s)", p.Node.Name, to.Node.Name, why)
	r.failovers.start(key, to.Node.Name, now)
	if err := st.Conns.OK(ctx, to.Addr, "CLUSTER", "FAILOVER"); err != nil {
		r.failoverFailed(st, p, err.Error())
		return
	}
	st.Wait(fmt.Sprintf("failing %s over to %s", p.Node.Name, to.Node.Name), time.Second)
}

// failoverFailed records a failed try of p's failover: the next one waits for the backoff.
func (r *Reconciler) failoverFailed(st *clusterState, p *round.Member, why string) {
	key := failoverKey{cluster: st.Cluster.UID, node: p.Node.Name}
	t := r.failovers.fail(key, why, r.Options.FailoverBackoff, r.Options.FailoverBackoffMax, time.Now())
	r.event(st.State, p.Node, corev1.EventTypeWarning, valkeyv1.EventFailoverStalled, "ClusterFailover",
		"failover of %s to %s did not complete (try %d): %s; next try in %s", p.Node.Name, t.to, t.failures, why, time.Until(t.retryAt).Round(time.Second))
	st.Wait("waiting to fail "+p.Node.Name+" over again", time.Until(t.retryAt))
}

// failoverStalled tells whether a failover of n is waiting out its backoff, and why.
func (r *Reconciler) failoverStalled(st *clusterState, name string) (bool, string) {
	t, now := r.failovers.get(failoverKey{cluster: st.Cluster.UID, node: name}), time.Now()
	if t.failures == 0 || t.running() || !now.Before(t.retryAt) {
		return false, ""
	}
	return true, t.describe(name, now)
}

// stalledFailovers describes the failovers of the cluster waiting out a backoff.
func (r *Reconciler) stalledFailovers(st *clusterState) []string {
	var out []string
	for _, n := range st.Nodes {
		if stalled, why := r.failoverStalled(st, n.Name); stalled {
			out = append(out, why)
		}
	}
	return out
}

// settleFailovers forgets the failovers of this cluster that are over: the node's replica
// took over (event FailedOver), or the node is gone or no longer a primary that owns slots.
func (r *Reconciler) settleFailovers(st *clusterState) {
	for key, t := range r.failovers.of(st.Cluster.UID) {
		n := st.Node(key.node)
		if n == nil {
			r.failovers.forget(key)
			continue
		}
		serves, known := st.ServesSlots(n)
		if !known || serves {
			continue
		}
		if t.running() {
			r.event(st.State, n, corev1.EventTypeNormal, valkeyv1.EventFailedOver, "ClusterFailover", "%s took over from %s", t.to, n.Name)
		}
		r.failovers.forget(key)
	}
}
