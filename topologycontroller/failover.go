package topologycontroller

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// syncedReplicas are the members of p's shard that follow p with their link up, most
// up to date (highest replication offset) first.
func syncedReplicas(st *clusterState, p *member) []*member {
	var out []*member
	for _, m := range st.sortedMembers() {
		if m == p || m.deleting() || m.node.Spec.Shard != p.node.Spec.Shard {
			continue
		}
		if !m.self.primary() && m.self.PrimaryID == p.id() && m.linkUp() {
			out = append(out, m)
		}
	}
	sortByOffset(out)
	return out
}

func sortByOffset(ms []*member) {
	for i := 1; i < len(ms); i++ {
		for j := i; j > 0 && replicationOffset(ms[j].repl) > replicationOffset(ms[j-1].repl); j-- {
			ms[j], ms[j-1] = ms[j-1], ms[j]
		}
	}
}

// failover makes the most up-to-date synced replica of primary p take over (CLUSTER
// FAILOVER on the replica, which waits for it to catch up) and waits until the roles have
// switched. Running it again after an interruption is safe.
func (r *Reconciler) failover(ctx context.Context, st *clusterState, p *member, why string) error {
	replicas := syncedReplicas(st, p)
	if len(replicas) == 0 {
		return fmt.Errorf("no synced replica of %s to fail over to", p.node.Name)
	}
	to := replicas[0]
	r.event(st, p.node, corev1.EventTypeNormal, valkeyv1.EventFailingOver, "ClusterFailover", "failing %s over to %s (%s)", p.node.Name, to.node.Name, why)
	if err := st.cs.ok(ctx, to.addr, "CLUSTER", "FAILOVER"); err != nil {
		return err
	}
	deadline := time.Now().Add(r.Options.FailoverTimeout)
	for {
		info, err := st.cs.str(ctx, to.addr, "INFO", "replication")
		if err == nil && parseInfo(info)["role"] == "master" {
			old, err := st.cs.str(ctx, p.addr, "INFO", "replication")
			if err == nil && parseInfo(old)["role"] == "slave" {
				r.event(st, p.node, corev1.EventTypeNormal, valkeyv1.EventFailedOver, "ClusterFailover", "%s took over from %s", to.node.Name, p.node.Name)
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("failover of %s to %s did not complete within %s", p.node.Name, to.node.Name, r.Options.FailoverTimeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
