package round

import (
	"context"
	"net"
	"strconv"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/clusternodes"
	"valkey.io/operator/internal/status"
)

// ProbeNotReady dials the servers of the given nodes whose pod is not Ready, at the pod IP
// their workload last reported: a server whose readiness probe fails may still serve its
// slots (a long script answering -BUSY, a probe timing out under CPU throttling, a kubelet
// that stopped reporting). What answers is kept in st.probed, apart from the members.
func (st *State) ProbeNotReady(ctx context.Context, nodes []*valkeyv1.ValkeyNode, port int) {
	for _, n := range nodes {
		if status.IsTrue(n.Status.Conditions, valkeyv1.ConditionWorkloadReady) || PodIP(n) == "" || st.Probed[n.Name] != nil {
			continue
		}
		m := &Member{Node: n, Addr: net.JoinHostPort(PodIP(n), strconv.Itoa(port))}
		if m.Err = observeMember(ctx, st.Conns, m); m.Err != nil {
			m.Self = nil
		}
		if st.Probed == nil {
			st.Probed = map[string]*Member{}
		}
		st.Probed[n.Name] = m
	}
}

// ServedBy is n as Valkey knows it: the member (or probed server) itself when it answers,
// else the line of its last known ID (or its address) in the view of a reachable member,
// preferring a line that shows it owning slots. known is false when nothing answers.
func (st *State) ServedBy(n *valkeyv1.ValkeyNode) (line *clusternodes.Node, self *Member, known bool) {
	if m := st.Members[n.Name]; m.Reachable() {
		return m.Self, m, true
	}
	if m := st.Probed[n.Name]; m.Reachable() {
		return m.Self, m, true
	}
	id, addr := RecordedID(n), ""
	if ip := PodIP(n); ip != "" && st.Seed != nil {
		_, port, _ := net.SplitHostPort(st.Seed.Addr)
		addr = net.JoinHostPort(ip, port)
	}
	pick := func(lines []clusternodes.Node) {
		for i := range lines {
			v := &lines[i]
			if (id != "" && v.ID == id) || (addr != "" && v.Addr == addr && !v.Handshake()) {
				if line == nil || (v.Primary() && v.SlotCount() > 0) {
					line = v
				}
			}
		}
	}
	// n answers to nothing, so no member stands for its ID: its lines are among each
	// member's lines of nodes that are no member, and in the seed's whole view.
	for _, m := range st.SortedMembers() {
		known = true
		pick(m.Others)
	}
	if st.Seed != nil {
		pick(st.Seed.View)
	}
	return line, nil, known
}

// ServesSlots tells whether Valkey knows n as a primary that owns slots; known is false
// when neither n's server nor any member of its cluster answers.
func (st *State) ServesSlots(n *valkeyv1.ValkeyNode) (serves, known bool) {
	line, _, known := st.ServedBy(n)
	return line != nil && line.Primary() && line.SlotCount() > 0, known
}

// RollMember is n as a roll candidate: its member, the server probed at its pod IP, or,
// when it does not answer but the cluster knows it, a stand-in built from the cluster's
// view (its ID and role, for its replicas to be found). nil when Valkey does not know it.
func (st *State) RollMember(n *valkeyv1.ValkeyNode) *Member {
	line, self, _ := st.ServedBy(n)
	if self != nil {
		return self
	}
	if line == nil {
		return nil
	}
	return &Member{Node: n, Addr: line.Addr, Self: line}
}

// Node is the ValkeyNode of the given name, nil when there is none.
func (st *State) Node(name string) *valkeyv1.ValkeyNode {
	for _, n := range st.Nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}
