package topologycontroller

import (
	"context"
	"fmt"
	"net"
	"strconv"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// observe dials every node whose pod is ready and reads its view of the cluster.
func (r *Reconciler) observe(ctx context.Context, vc *valkeyv1.ValkeyCluster, nodes []*valkeyv1.ValkeyNode, cs *conns) *clusterState {
	st := newClusterState(vc, nodes, cs)
	for _, n := range nodes {
		if !status.IsTrue(n.Status.Conditions, valkeyv1.ConditionWorkloadReady) || podIP(n) == "" {
			continue
		}
		m := &member{node: n, addr: net.JoinHostPort(podIP(n), strconv.Itoa(r.Options.ValkeyPort))}
		st.members[n.Name] = m
		if m.err = observeMember(ctx, cs, m); m.err != nil {
			m.self = nil
			continue
		}
		st.byID[m.id()] = m
	}
	st.seed = pickSeed(st)
	if st.seed != nil {
		for i := range st.seed.view {
			n := &st.seed.view[i]
			if !n.Handshake() {
				st.view[n.ID] = n
			}
		}
	}
	st.findPrimaries()
	return st
}

// observeMember reads what m's server says: CLUSTER NODES, INFO server and replication,
// CLUSTER INFO.
func observeMember(ctx context.Context, cs *conns, m *member) error {
	out, err := cs.str(ctx, m.addr, "CLUSTER", "NODES")
	if err != nil {
		return err
	}
	if m.view, err = parseClusterNodes(out); err != nil {
		return err
	}
	for i := range m.view {
		if m.view[i].Myself() {
			m.self = &m.view[i]
		}
	}
	if m.self == nil {
		return fmt.Errorf("no myself line in CLUSTER NODES of %s", m.addr)
	}
	info, err := cs.str(ctx, m.addr, "INFO", "server", "replication")
	if err != nil {
		return err
	}
	m.repl = parseInfo(info)
	ci, err := cs.str(ctx, m.addr, "CLUSTER", "INFO")
	if err != nil {
		return err
	}
	m.state = parseInfo(ci)["cluster_state"]
	return nil
}

// seedScore ranks a member as the seed: not being deleted, then the most nodes known, then
// the most slots owned in its view.
func seedScore(m *member) [3]int {
	alive := 1
	if m.deleting() {
		alive = 0
	}
	slots := 0
	for i := range m.view {
		if !m.view[i].Handshake() {
			slots += m.view[i].SlotCount()
		}
	}
	return [3]int{alive, len(m.view), slots}
}

// pickSeed chooses the member whose view is the reference: the best seedScore, then the
// first by name. Nodes being deleted are never the seed unless nothing else is reachable.
func pickSeed(st *clusterState) *member {
	var best *member
	var bestScore [3]int
	for _, n := range st.nodes {
		m := st.members[n.Name]
		if !m.reachable() {
			continue
		}
		if s := seedScore(m); best == nil || greater(s, bestScore) {
			best, bestScore = m, s
		}
	}
	return best
}

func greater(a, b [3]int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] > b[i]
		}
	}
	return false
}

// findPrimaries decides each shard's current primary among its reachable members: a
// primary that owns slots; else the primary its replicas follow; else the primary with the
// lowest replica index (a new, empty shard).
func (st *clusterState) findPrimaries() {
	shards := map[int32][]*member{}
	for _, n := range st.nodes {
		if m := st.members[n.Name]; st.inCluster(m) {
			shards[n.Spec.Shard] = append(shards[n.Spec.Shard], m)
		}
	}
	for shard, ms := range shards {
		best := primaryWithMostSlots(ms)
		if best == nil {
			best = st.followedPrimary(shard, ms)
		}
		if best == nil {
			best = emptyShardPrimary(ms)
		}
		if best != nil {
			st.primary[shard] = best
		}
	}
}

func primaryWithMostSlots(ms []*member) *member {
	var best *member
	for _, m := range ms {
		if m.self.Primary() && m.self.SlotCount() > 0 && (best == nil || m.self.SlotCount() > best.self.SlotCount()) {
			best = m
		}
	}
	return best
}

// followedPrimary is the primary of the shard some member of it follows.
func (st *clusterState) followedPrimary(shard int32, ms []*member) *member {
	for _, m := range ms {
		if !m.self.Primary() && m.self.PrimaryID != "" {
			if p := st.byID[m.self.PrimaryID]; p != nil && p.node.Spec.Shard == shard && p.self.Primary() {
				return p
			}
		}
	}
	return nil
}

// emptyShardPrimary is the primary with the lowest replica index of a shard without slots,
// unless some member still follows a primary that is gone (then Valkey decides, not us).
func emptyShardPrimary(ms []*member) *member {
	for _, m := range ms {
		if !m.self.Primary() {
			return nil
		}
	}
	var best *member
	for _, m := range ms {
		if !m.deleting() && (best == nil || m.node.Spec.ReplicaIndex < best.node.Spec.ReplicaIndex) {
			best = m
		}
	}
	return best
}
