package failover

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/topologycontroller/round"
)

// SyncedReplicas are the members of p's shard that follow p with their link up, most
// up to date (highest replication offset) first.
func SyncedReplicas(st *round.State, p *round.Member) []*round.Member {
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

// sortByOffset sorts ms by replication offset, highest first.
func sortByOffset(ms []*round.Member) {
	for i := 1; i < len(ms); i++ {
		for j := i; j > 0 && round.ReplicationOffset(ms[j].Repl) > round.ReplicationOffset(ms[j-1].Repl); j-- {
			ms[j], ms[j-1] = ms[j-1], ms[j]
		}
	}
}

// Start moves primary p's slots to its most up-to-date synced replica without waiting
// for it: it asks the replica to take over (CLUSTER FAILOVER, which lets it catch up
// first) and returns; later rounds see the roles switched (settleFailovers), or, once
// Options.Timeout has passed, count the try as failed. A failed try is retried only after
// a backoff that doubles with each failure (FailoverBackoff up to FailoverBackoffMax),
// reported as a Warning event and, by the callers, as reason FailoverBackoff. Running it
// again after an interruption is safe.
func (fo *Failovers) Start(ctx context.Context, st *round.State, p *round.Member, why string) {
	key := failoverKey{cluster: st.Cluster.UID, node: p.Node.Name}
	t, now := fo.tries.get(key), time.Now()
	switch {
	case t.running() && now.Sub(t.started) < fo.Options.Timeout:
		st.Wait(fmt.Sprintf("failing %s over to %s", p.Node.Name, t.to), time.Second)
		return
	case t.running():
		fo.failoverFailed(st, p, fmt.Sprintf("%s did not take over within %s", t.to, fo.Options.Timeout))
		return
	case now.Before(t.retryAt):
		st.Wait("waiting to fail "+p.Node.Name+" over again", t.retryAt.Sub(now))
		return
	}
	replicas := SyncedReplicas(st, p)
	if len(replicas) == 0 {
		st.Wait("no synced replica of "+p.Node.Name+" to fail over to", time.Second)
		return
	}
	to := replicas[0]
	fo.Event(st, p.Node, corev1.EventTypeNormal, valkeyv1.EventFailingOver, "ClusterFailover", "failing %s over to %s (%s)", p.Node.Name, to.Node.Name, why)
	fo.tries.start(key, to.Node.Name, now)
	if err := st.Conns.OK(ctx, to.Addr, "CLUSTER", "FAILOVER"); err != nil {
		fo.failoverFailed(st, p, err.Error())
		return
	}
	st.Wait(fmt.Sprintf("failing %s over to %s", p.Node.Name, to.Node.Name), time.Second)
}

// failoverFailed records a failed try of p's failover: the next one waits for the backoff.
func (fo *Failovers) failoverFailed(st *round.State, p *round.Member, why string) {
	key := failoverKey{cluster: st.Cluster.UID, node: p.Node.Name}
	t := fo.tries.fail(key, why, fo.Options.Backoff, fo.Options.BackoffMax, time.Now())
	fo.Event(st, p.Node, corev1.EventTypeWarning, valkeyv1.EventFailoverStalled, "ClusterFailover",
		"failover of %s to %s did not complete (try %d): %s; next try in %s", p.Node.Name, t.to, t.failures, why, time.Until(t.retryAt).Round(time.Second))
	st.Wait("waiting to fail "+p.Node.Name+" over again", time.Until(t.retryAt))
}

// Stalled tells whether a failover of n is waiting out its backoff, and why.
func (fo *Failovers) Stalled(st *round.State, name string) (bool, string) {
	t, now := fo.tries.get(failoverKey{cluster: st.Cluster.UID, node: name}), time.Now()
	if t.failures == 0 || t.running() || !now.Before(t.retryAt) {
		return false, ""
	}
	return true, t.describe(name, now)
}

// AllStalled describes the failovers of the cluster waiting out a backoff.
func (fo *Failovers) AllStalled(st *round.State) []string {
	var out []string
	for _, n := range st.Nodes {
		if stalled, why := fo.Stalled(st, n.Name); stalled {
			out = append(out, why)
		}
	}
	return out
}

// Settle forgets the failovers of this cluster that are over: the node's replica
// took over (event FailedOver), or the node is gone or no longer a primary that owns slots.
func (fo *Failovers) Settle(st *round.State) {
	for key, t := range fo.tries.of(st.Cluster.UID) {
		n := st.Node(key.node)
		if n == nil {
			fo.tries.forget(key)
			continue
		}
		serves, known := st.ServesSlots(n)
		if !known || serves {
			continue
		}
		if t.running() {
			fo.Event(st, n, corev1.EventTypeNormal, valkeyv1.EventFailedOver, "ClusterFailover", "%s took over from %s", t.to, n.Name)
		}
		fo.tries.forget(key)
	}
}
