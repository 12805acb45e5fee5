package round

import (
	"context"
	"fmt"
	"net"
	"strconv"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/clusternodes"
	"valkey.io/operator/internal/status"
)

// Observe dials every node whose pod is ready and reads what its server says: first its
// ID, INFO and CLUSTER INFO from every member, then each member's CLUSTER NODES, read one at
// a time and summarised (viewScan), so that a reconcile holds one whole view (the seed's)
// and not one per member.
func Observe(ctx context.Context, vc *valkeyv1.ValkeyCluster, nodes []*valkeyv1.ValkeyNode, cs *Conns, port int) *State {
	st := NewState(vc, nodes, cs)
	vs := &viewScan{byID: map[string]*Member{}}
	var ms []*Member
	for _, n := range nodes {
		if !status.IsTrue(n.Status.Conditions, valkeyv1.ConditionWorkloadReady) || PodIP(n) == "" {
			continue
		}
		m := &Member{Node: n, Addr: net.JoinHostPort(PodIP(n), strconv.Itoa(port))}
		st.Members[n.Name] = m
		if m.Err = observeInfo(ctx, cs, m); m.Err == nil {
			vs.byID[m.MyID] = m
			ms = append(ms, m)
		}
	}
	var best *Member
	for _, m := range ms {
		if m.Err = scanView(ctx, cs, vs, m, best); m.Err != nil {
			m.Self = nil
			continue
		}
		st.ByID[m.ID()] = m
		if m.View != nil {
			best = m
		}
	}
	st.Seed = pickSeed(st)
	if st.Seed != nil && st.Seed.View == nil {
		// The seed's view, read again (a member that failed its scan changed the ranking).
		if err := observeMember(ctx, cs, st.Seed); err != nil {
			delete(st.ByID, st.Seed.ID())
			st.Seed.Err, st.Seed.Self, st.Seed = err, nil, nil
		}
	}
	if st.Seed != nil {
		for i := range st.Seed.View {
			n := &st.Seed.View[i]
			if !n.Handshake() {
				st.View[n.ID] = n
			}
		}
	}
	st.FindPrimaries()
	return st
}

// observeInfo reads m's ID, INFO server and replication, and CLUSTER INFO, pipelined.
func observeInfo(ctx context.Context, cs *Conns, m *Member) error {
	res, err := cs.Multi(ctx, m.Addr, [][]string{{"CLUSTER", "MYID"}, {"INFO", "server", "replication"}, {"CLUSTER", "INFO"}})
	if err != nil {
		return err
	}
	var out [3]string
	for i := range res {
		if out[i], err = res[i].ToString(); err != nil {
			return fmt.Errorf("reply of %s: %w", m.Addr, err)
		}
	}
	m.MyID = out[0]
	m.Repl = clusternodes.ParseInfo(out[1])
	m.ClusterState = clusternodes.ParseInfo(out[2])["cluster_state"]
	return nil
}

// scanView reads m's CLUSTER NODES and summarises it; m keeps the whole view when it would
// be the seed so far (it ranks above best, whose whole view is dropped).
func scanView(ctx context.Context, cs *Conns, vs *viewScan, m, best *Member) error {
	out, err := cs.Str(ctx, m.Addr, "CLUSTER", "NODES")
	if err != nil {
		return err
	}
	if err := vs.scan(m, out); err != nil {
		return err
	}
	if m.Self.ID != m.MyID {
		return fmt.Errorf("%s changed its node ID while observed", m.Addr)
	}
	if best != nil && !greater(seedScore(m), seedScore(best)) {
		return nil
	}
	if m.View, err = clusternodes.Parse(out); err != nil {
		return err
	}
	if best != nil {
		best.View = nil
	}
	return nil
}

// observeMember reads what a single server says: its whole CLUSTER NODES, INFO server and
// replication, CLUSTER INFO.
func observeMember(ctx context.Context, cs *Conns, m *Member) error {
	out, err := cs.Str(ctx, m.Addr, "CLUSTER", "NODES")
	if err != nil {
		return err
	}
	if m.View, err = clusternodes.Parse(out); err != nil {
		return err
	}
	m.Self = nil
	for i := range m.View {
		if m.View[i].Myself() {
			m.Self = &m.View[i]
		}
	}
	if m.Self == nil {
		return fmt.Errorf("no myself line in CLUSTER NODES of %s", m.Addr)
	}
	info, err := cs.Str(ctx, m.Addr, "INFO", "server", "replication")
	if err != nil {
		return err
	}
	m.Repl = clusternodes.ParseInfo(info)
	ci, err := cs.Str(ctx, m.Addr, "CLUSTER", "INFO")
	if err != nil {
		return err
	}
	m.ClusterState = clusternodes.ParseInfo(ci)["cluster_state"]
	return nil
}

// seedScore ranks a member as the seed: not being deleted, then the most nodes known, then
// the most slots owned in its view.
func seedScore(m *Member) [3]int {
	alive := 1
	if m.Deleting() {
		alive = 0
	}
	return [3]int{alive, m.Lines, m.Slots}
}

// pickSeed chooses the member whose view is the reference: the best seedScore, then the
// first by name. Nodes being deleted are never the seed unless nothing else is reachable.
func pickSeed(st *State) *Member {
	var best *Member
	var bestScore [3]int
	for _, n := range st.Nodes {
		m := st.Members[n.Name]
		if !m.Reachable() {
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

// FindPrimaries decides each shard's current primary among its reachable members: a
// primary that owns slots; else the primary its replicas follow; else the restored node or
// the primary with the lowest replica index (a new, empty shard). A shard whose members all
// follow primaries of other shards (Strays) has none until one of them is detached
// (membership.Members.DetachStray).
func (st *State) FindPrimaries() {
	shards := map[int32][]*Member{}
	for _, n := range st.Nodes {
		if m := st.Members[n.Name]; st.InCluster(m) {
			shards[n.Spec.Shard] = append(shards[n.Spec.Shard], m)
		}
	}
	for shard, ms := range shards {
		best := primaryWithMostSlots(ms)
		if best == nil {
			best = st.followedPrimary(shard, ms)
		}
		if best == nil {
			best = st.emptyShardPrimary(ms)
		}
		if best != nil {
			st.Primary[shard] = best
		}
	}
}

func primaryWithMostSlots(ms []*Member) *Member {
	var best *Member
	for _, m := range ms {
		if m.Self.Primary() && m.Self.SlotCount() > 0 && (best == nil || m.Self.SlotCount() > best.Self.SlotCount()) {
			best = m
		}
	}
	return best
}

// followedPrimary is the primary of the shard some member of it follows.
func (st *State) followedPrimary(shard int32, ms []*Member) *Member {
	for _, m := range ms {
		if !m.Self.Primary() && m.Self.PrimaryID != "" {
			if p := st.ByID[m.Self.PrimaryID]; p != nil && p.Node.Spec.Shard == shard && p.Self.Primary() {
				return p
			}
		}
	}
	return nil
}

// emptyShardPrimary is the primary with the lowest replica index of a shard without slots,
// unless some member still follows a primary that is gone (then Valkey decides, not us).
// Members that follow a live primary of another shard (Stray) are passed over: Replicate
// points them at the primary chosen here.
func (st *State) emptyShardPrimary(ms []*Member) *Member {
	for _, m := range ms {
		if !m.Self.Primary() && !st.Stray(m) {
			return nil
		}
	}
	var best *Member
	for _, m := range ms {
		if m.Self.Primary() && !m.Deleting() && (best == nil || emptyShardBefore(m, best)) {
			best = m
		}
	}
	return best
}

// Stray tells whether m is a replica of a reachable primary of another shard. Valkey makes
// a primary that loses its last slot, and its replicas, replicas of the slot's new owner
// (cluster-allow-replica-migration): a removed shard's nodes end so, and come back so from
// their retained claims (nodes.conf) when the shard is added again. Its data is a copy of
// that primary's, held there.
func (st *State) Stray(m *Member) bool {
	if !m.Reachable() || m.Self.Primary() {
		return false
	}
	p := st.ByID[m.Self.PrimaryID]
	return p != nil && p != m && p.Self.Primary() && p.Node.Spec.Shard != m.Node.Spec.Shard
}

// emptyShardBefore orders the candidates to be an empty shard's primary: a node restored
// from a backup first (its shard's keys, if any, are on it), then by replica index.
func emptyShardBefore(a, b *Member) bool {
	if ra, rb := a.Node.Spec.Restore != nil, b.Node.Spec.Restore != nil; ra != rb {
		return ra
	}
	return a.Node.Spec.ReplicaIndex < b.Node.Spec.ReplicaIndex
}
