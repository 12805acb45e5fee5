package topologycontroller

import (
	"context"
	"fmt"
	"net"
	"strconv"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// observe dials every node whose pod is ready and reads what its server says: first its
// ID, INFO and CLUSTER INFO from every member, then each member's CLUSTER NODES, read one at
// a time and summarised (viewScan), so that a reconcile holds one whole view (the seed's)
// and not one per member.
func (r *Reconciler) observe(ctx context.Context, vc *valkeyv1.ValkeyCluster, nodes []*valkeyv1.ValkeyNode, cs *conns) *clusterState {
	st := newClusterState(vc, nodes, cs)
	vs := &viewScan{byID: map[string]*member{}}
	var ms []*member
	for _, n := range nodes {
		if !status.IsTrue(n.Status.Conditions, valkeyv1.ConditionWorkloadReady) || podIP(n) == "" {
			continue
		}
		m := &member{node: n, addr: net.JoinHostPort(podIP(n), strconv.Itoa(r.Options.ValkeyPort))}
		st.members[n.Name] = m
		if m.err = observeInfo(ctx, cs, m); m.err == nil {
			vs.byID[m.myID] = m
			ms = append(ms, m)
		}
	}
	var best *member
	for _, m := range ms {
		if m.err = scanView(ctx, cs, vs, m, best); m.err != nil {
			m.self = nil
			continue
		}
		st.byID[m.id()] = m
		if m.view != nil {
			best = m
		}
	}
	st.seed = pickSeed(st)
	if st.seed != nil && st.seed.view == nil {
		// The seed's view, read again (a member that failed its scan changed the ranking).
		if err := observeMember(ctx, cs, st.seed); err != nil {
			delete(st.byID, st.seed.id())
			st.seed.err, st.seed.self, st.seed = err, nil, nil
		}
	}
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

// observeInfo reads m's ID, INFO server and replication, and CLUSTER INFO, pipelined.
func observeInfo(ctx context.Context, cs *conns, m *member) error {
	res, err := cs.multi(ctx, m.addr, [][]string{{"CLUSTER", "MYID"}, {"INFO", "server", "replication"}, {"CLUSTER", "INFO"}})
	if err != nil {
		return err
	}
	var out [3]string
	for i := range res {
		if out[i], err = res[i].ToString(); err != nil {
			return fmt.Errorf("reply of %s: %w", m.addr, err)
		}
	}
	m.myID = out[0]
	m.repl = parseInfo(out[1])
	m.state = parseInfo(out[2])["cluster_state"]
	return nil
}

// scanView reads m's CLUSTER NODES and summarises it; m keeps the whole view when it would
// be the seed so far (it ranks above best, whose whole view is dropped).
func scanView(ctx context.Context, cs *conns, vs *viewScan, m, best *member) error {
	out, err := cs.str(ctx, m.addr, "CLUSTER", "NODES")
	if err != nil {
		return err
	}
	if err := vs.scan(m, out); err != nil {
		return err
	}
	if m.self.ID != m.myID {
		return fmt.Errorf("%s changed its node ID while observed", m.addr)
	}
	if best != nil && !greater(seedScore(m), seedScore(best)) {
		return nil
	}
	if m.view, err = parseClusterNodes(out); err != nil {
		return err
	}
	if best != nil {
		best.view = nil
	}
	return nil
}

// observeMember reads what a single server says: its whole CLUSTER NODES, INFO server and
// replication, CLUSTER INFO.
func observeMember(ctx context.Context, cs *conns, m *member) error {
	out, err := cs.str(ctx, m.addr, "CLUSTER", "NODES")
	if err != nil {
		return err
	}
	if m.view, err = parseClusterNodes(out); err != nil {
		return err
	}
	m.self = nil
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
	return [3]int{alive, m.lines, m.slots}
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
// primary that owns slots; else the primary its replicas follow; else the restored node or
// the primary with the lowest replica index (a new, empty shard).
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
		if !m.deleting() && (best == nil || emptyShardBefore(m, best)) {
			best = m
		}
	}
	return best
}

// emptyShardBefore orders the candidates to be an empty shard's primary: a node restored
// from a backup first (its shard's keys, if any, are on it), then by replica index.
func emptyShardBefore(a, b *member) bool {
	if ra, rb := a.node.Spec.Restore != nil, b.node.Spec.Restore != nil; ra != rb {
		return ra
	}
	return a.node.Spec.ReplicaIndex < b.node.Spec.ReplicaIndex
}
