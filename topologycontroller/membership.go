package topologycontroller

import (
	"context"
	"fmt"
	"net"
	"time"

	corev1 "k8s.io/api/core/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// meet brings every ready node into the seed's cluster, at the address its pod has now:
// a new node, a node that came back with an empty /data (a new ID), and a node that came
// back with its nodes.conf at a new IP (same ID; the MEET repairs the stale address in
// every peer's view). It then waits until every member knows every other one.
func (r *Reconciler) meet(ctx context.Context, st *clusterState) (bool, error) {
	if st.seed == nil {
		if len(st.members) > 0 {
			st.wait("waiting for a reachable node", time.Second)
			return true, nil
		}
		st.wait("waiting for pods", 0)
		return false, nil
	}
	acted := false
	for _, m := range st.sortedMembers() {
		if m == st.seed || m.deleting() {
			continue
		}
		if !m.sees(st.seed) {
			// m has never seen the seed (a new or reset node), or only at a stale address.
			if seenAt := m.unseen[st.seed.id()]; seenAt != st.seed.addr {
				if err := meetAt(ctx, st.cs, m.addr, st.seed.addr); err != nil {
					return acted, err
				}
				acted = true
			}
		}
		if !st.inCluster(m) {
			if err := meetAt(ctx, st.cs, st.seed.addr, m.addr); err != nil {
				return acted, err
			}
			r.event(st, m.node, corev1.EventTypeNormal, valkeyv1.EventMeet, "ClusterMeet", "node %s (%s) met at %s", m.node.Name, short8(m.id()), m.addr)
			acted = true
		}
	}
	if acted {
		st.wait("meeting nodes", short)
		return true, nil
	}
	if a, b := st.unseenPair(); a != nil {
		st.wait(fmt.Sprintf("waiting for %s to see %s at %s", a.node.Name, b.node.Name, b.addr), short)
		return true, nil
	}
	return false, nil
}

func meetAt(ctx context.Context, cs *conns, on, addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	return cs.ok(ctx, on, "CLUSTER", "MEET", host, port)
}

func short8(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// replicate makes every other member of a shard a replica of the shard's primary. A node
// that holds keys but no slots (it came back with old data, or lost its slots) is flushed
// first, since Valkey only turns an empty primary into a replica, but only when the slots'
// owners hold those keys (flushIfHeldElsewhere); otherwise it stays out and says why.
func (r *Reconciler) replicate(ctx context.Context, st *clusterState) (bool, error) {
	acted := false
	for _, m := range st.sortedMembers() {
		if m.deleting() || !st.inCluster(m) {
			continue
		}
		p := st.primary[m.node.Spec.Shard]
		if p == nil || p == m || !wanted(st.cluster, m.node.Spec.Shard, m.node.Spec.ReplicaIndex) {
			continue
		}
		if !m.self.Primary() && m.self.PrimaryID == p.id() {
			// Following the right ID, but the replication link may still point at the
			// primary's old address (a primary that came back at a new IP with its
			// nodes.conf): REPLICATE again re-points it.
			if host, port := m.repl["master_host"], m.repl["master_port"]; host == "" || net.JoinHostPort(host, port) == p.addr || m.linkUp() {
				continue
			}
		}
		if m.self.Primary() && m.self.SlotCount() > 0 {
			continue // a primary with slots is never demoted here; rolls and drains fail over
		}
		if m.self.Primary() {
			flushed, err := r.flushIfHeldElsewhere(ctx, st, m)
			if err != nil {
				return acted, err
			}
			if !flushed {
				continue // its keys may exist nowhere else: it stays out (KeysNotElsewhere)
			}
		}
		if err := st.cs.ok(ctx, m.addr, "CLUSTER", "REPLICATE", p.id()); err != nil {
			return acted, err
		}
		r.event(st, m.node, corev1.EventTypeNormal, valkeyv1.EventReplicate, "ClusterReplicate", "node %s replicates %s (%s)", m.node.Name, p.node.Name, short8(p.id()))
		acted = true
	}
	if acted {
		st.wait("attaching replicas", short)
	}
	return acted, nil
}

// dialable tells whether something accepts TCP connections at addr.
func dialable(ctx context.Context, addr string, timeout time.Duration) bool {
	d := net.Dialer{Timeout: timeout}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}

// unseenPair finds two members where the first does not see the second at its address
// yet (members being deleted and out of the cluster are left out); nil once every member
// sees every other. Each member's scan noted the members it does not see, so this looks
// only at those.
func (st *clusterState) unseenPair() (*member, *member) {
	left := func(m *member) bool { return m.deleting() && !st.inCluster(m) }
	for _, a := range st.sortedMembers() {
		if left(a) {
			continue
		}
		var first *member
		for id := range a.unseen {
			if b := st.byID[id]; b != nil && b != a && !left(b) && (first == nil || b.node.Name < first.node.Name) {
				first = b
			}
		}
		if first != nil {
			return a, first
		}
	}
	return nil, nil
}
