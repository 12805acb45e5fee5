package membership

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/topologycontroller/round"
)

// Meet brings every ready node into the seed's cluster, at the address its pod has now:
// a new node, a node that came back with an empty /data (a new ID), and a node that came
// back with its nodes.conf at a new IP (same ID; the MEET repairs the stale address in
// every peer's view). It then waits until every member knows every other one.
func (ms *Members) Meet(ctx context.Context, st *round.State) (bool, error) {
	if st.Seed == nil {
		if len(st.Members) > 0 {
			st.Wait("waiting for a reachable node", time.Second)
			return true, nil
		}
		st.Wait("waiting for pods", 0)
		return false, nil
	}
	acted := false
	for _, m := range st.SortedMembers() {
		if m == st.Seed || m.Deleting() {
			continue
		}
		if !m.Sees(st.Seed) {
			// m has never seen the seed (a new or reset node), or only at a stale address.
			if seenAt := m.Unseen[st.Seed.ID()]; seenAt != st.Seed.Addr {
				if err := st.Conns.Meet(ctx, m.Addr, st.Seed.Addr); err != nil {
					return acted, err
				}
				acted = true
			}
		}
		if !st.InCluster(m) {
			if err := st.Conns.Meet(ctx, st.Seed.Addr, m.Addr); err != nil {
				return acted, err
			}
			ms.Event(st, m.Node, corev1.EventTypeNormal, valkeyv1.EventMeet, "ClusterMeet", "node %s (%s) met at %s", m.Node.Name, round.ShortID(m.ID()), m.Addr)
			acted = true
		}
	}
	if acted {
		st.Wait("meeting nodes", round.Short)
		return true, nil
	}
	if a, b := unseenPair(st); a != nil {
		if err := meetUnseen(ctx, st); err != nil {
			return true, err
		}
		st.Wait(fmt.Sprintf("waiting for %s to see %s at %s", a.Node.Name, b.Node.Name, b.Addr), round.Short)
		return true, nil
	}
	return false, nil
}

// maxDirectMeets bounds the MEETs meetUnseen sends in one round: a large cluster forming
// leans on gossip for the rest.
const maxDirectMeets = 32

// meetUnseen has each member that does not know another member at all, or knows it at
// another address, meet it directly instead of waiting for gossip to carry it there (a
// second or more per hop). A member seen at its address but flagged failing is left to
// gossip: a MEET does not mend a link.
func meetUnseen(ctx context.Context, st *round.State) error {
	sent := 0
	for _, a := range st.SortedMembers() {
		if a.Deleting() {
			continue
		}
		for _, b := range st.SortedMembers() {
			seenAt, unseen := a.Unseen[b.ID()]
			if !unseen || b == a || b.Deleting() || seenAt == b.Addr || sent == maxDirectMeets {
				continue
			}
			if err := st.Conns.Meet(ctx, a.Addr, b.Addr); err != nil {
				return err
			}
			sent++
		}
	}
	return nil
}

// Replicate makes every other member of a shard a replica of the shard's primary. A node
// that holds keys but no slots (it came back with old data, or lost its slots) is flushed
// first, since Valkey only turns an empty primary into a replica, but only when the slots'
// owners hold those keys (flushIfHeldElsewhere); otherwise it stays out and says why. A
// shard whose members all follow primaries of other shards has no primary until
// DetachStray gives it one.
func (ms *Members) Replicate(ctx context.Context, st *round.State) (bool, error) {
	acted := false
	for _, m := range st.SortedMembers() {
		if m.Deleting() || !st.InCluster(m) {
			continue
		}
		p := st.Primary[m.Node.Spec.Shard]
		if p == nil || p == m || !round.Wanted(st.Cluster, m.Node.Spec.Shard, m.Node.Spec.ReplicaIndex) {
			continue
		}
		if !m.Self.Primary() && m.Self.PrimaryID == p.ID() {
			// Following the right ID, but the replication link may still point at the
			// primary's old address (a primary that came back at a new IP with its
			// nodes.conf): REPLICATE again re-points it.
			if host, port := m.Repl["master_host"], m.Repl["master_port"]; host == "" || net.JoinHostPort(host, port) == p.Addr || m.LinkUp() {
				continue
			}
		}
		if m.Self.Primary() && m.Self.SlotCount() > 0 {
			continue // a primary with slots is never demoted here; rolls and drains fail over
		}
		if m.Self.Primary() {
			flushed, err := ms.FlushIfHeldElsewhere(ctx, st, m)
			if err != nil {
				return acted, err
			}
			if !flushed {
				continue // its keys may exist nowhere else: it stays out (KeysNotElsewhere)
			}
		}
		if err := st.Conns.OK(ctx, m.Addr, "CLUSTER", "REPLICATE", p.ID()); err != nil {
			return acted, err
		}
		ms.Event(st, m.Node, corev1.EventTypeNormal, valkeyv1.EventReplicate, "ClusterReplicate", "node %s replicates %s (%s)", m.Node.Name, p.Node.Name, round.ShortID(p.ID()))
		acted = true
	}
	if acted {
		st.Wait("attaching replicas", round.Short)
	}
	return acted, nil
}

// DetachStray gives the first wanted shard without a primary whose nodes all follow
// primaries of other shards (round.State.Stray: a removed shard's nodes end so when its
// last slot leaves, and come back so from their retained claims) a primary of its own: its
// node with the lowest replica index becomes an empty primary, by CLUSTER REPLICATE NO ONE
// on Valkey 9 and later, else CLUSTER RESET SOFT (which also forgets its peers: Meet brings
// it back). Either drops its data, a copy of the primary it followed, which keeps it.
// Replicate then points the shard's other nodes at it. A shard with a node that is not a
// reachable member yet is left alone: that node may be the shard's primary coming back.
func (ms *Members) DetachStray(ctx context.Context, st *round.State) (bool, error) {
	for shard := int32(0); shard < st.Cluster.Spec.Shards; shard++ {
		m := strayCandidate(st, shard)
		if m == nil {
			continue
		}
		p := st.ByID[m.Self.PrimaryID]
		how := []string{"CLUSTER", "REPLICATE", "NO", "ONE"}
		if m.ValkeyMajor() < 9 {
			how = []string{"CLUSTER", "RESET", "SOFT"}
		}
		if err := st.Conns.OK(ctx, m.Addr, how...); err != nil {
			return true, fmt.Errorf("detach %s from %s: %w", m.Node.Name, p.Node.Name, err)
		}
		ms.Event(st, m.Node, corev1.EventTypeNormal, valkeyv1.EventReplicaDetached, "ClusterDetach",
			"node %s of shard %d followed %s (%s) of shard %d: made an empty primary for its own shard (%s); its copy of %s's keys is dropped",
			m.Node.Name, shard, p.Node.Name, round.ShortID(p.ID()), p.Node.Spec.Shard, strings.Join(how, " "), p.Node.Name)
		st.Wait(fmt.Sprintf("making %s the primary of shard %d (it followed %s of shard %d)", m.Node.Name, shard, p.Node.Name, p.Node.Spec.Shard), round.Short)
		return true, nil
	}
	return false, nil
}

// strayCandidate is the node to detach from another shard's primary to be the primary of
// shard: nil unless the shard has no primary and every node of it is a member of the
// cluster that follows a primary of another shard.
func strayCandidate(st *round.State, shard int32) *round.Member {
	if st.Primary[shard] != nil {
		return nil
	}
	var best *round.Member
	for _, n := range st.Nodes {
		if n.Spec.Shard != shard {
			continue
		}
		m := st.Members[n.Name]
		if !st.InCluster(m) || !st.Stray(m) {
			return nil
		}
		if m.Deleting() || !round.Wanted(st.Cluster, shard, n.Spec.ReplicaIndex) {
			continue
		}
		if best == nil || n.Spec.ReplicaIndex < best.Node.Spec.ReplicaIndex {
			best = m
		}
	}
	return best
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
func unseenPair(st *round.State) (*round.Member, *round.Member) {
	left := func(m *round.Member) bool { return m.Deleting() && !st.InCluster(m) }
	for _, a := range st.SortedMembers() {
		if left(a) {
			continue
		}
		var first *round.Member
		for id := range a.Unseen {
			if b := st.ByID[id]; b != nil && b != a && !left(b) && (first == nil || b.Node.Name < first.Node.Name) {
				first = b
			}
		}
		if first != nil {
			return a, first
		}
	}
	return nil, nil
}
