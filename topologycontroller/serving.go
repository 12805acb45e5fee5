package topologycontroller

import (
	"context"
	"net"
	"strconv"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// probeNotReady dials the servers of the given nodes whose pod is not Ready, at the pod IP
// their workload last reported: a server whose readiness probe fails may still serve its
// slots (a long script answering -BUSY, a probe timing out under CPU throttling, a kubelet
// that stopped reporting). What answers is kept in st.probed, apart from the members.
func (r *Reconciler) probeNotReady(ctx context.Context, st *clusterState, nodes []*valkeyv1.ValkeyNode) {
	for _, n := range nodes {
		if status.IsTrue(n.Status.Conditions, valkeyv1.ConditionWorkloadReady) || podIP(n) == "" || st.probed[n.Name] != nil {
			continue
		}
		m := &member{node: n, addr: net.JoinHostPort(podIP(n), strconv.Itoa(r.Options.ValkeyPort))}
		if m.err = observeMember(ctx, st.cs, m); m.err != nil {
			m.self = nil
		}
		if st.probed == nil {
			st.probed = map[string]*member{}
		}
		st.probed[n.Name] = m
	}
}

// servedBy is n as Valkey knows it: the member (or probed server) itself when it answers,
// else the line of its last known ID (or its address) in the view of a reachable member,
// preferring a line that shows it owning slots. known is false when nothing answers.
func (st *clusterState) servedBy(n *valkeyv1.ValkeyNode) (line *clusterNode, self *member, known bool) {
	if m := st.members[n.Name]; m.reachable() {
		return m.self, m, true
	}
	if m := st.probed[n.Name]; m.reachable() {
		return m.self, m, true
	}
	id, addr := recordedID(n), ""
	if ip := podIP(n); ip != "" && st.seed != nil {
		_, port, _ := net.SplitHostPort(st.seed.addr)
		addr = net.JoinHostPort(ip, port)
	}
	pick := func(lines []clusterNode) {
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
	for _, m := range st.sortedMembers() {
		known = true
		pick(m.others)
	}
	if st.seed != nil {
		pick(st.seed.view)
	}
	return line, nil, known
}

// servesSlots tells whether Valkey knows n as a primary that owns slots; known is false
// when neither n's server nor any member of its cluster answers.
func (st *clusterState) servesSlots(n *valkeyv1.ValkeyNode) (serves, known bool) {
	line, _, known := st.servedBy(n)
	return line != nil && line.Primary() && line.SlotCount() > 0, known
}

// rollMember is n as a roll candidate: its member, the server probed at its pod IP, or,
// when it does not answer but the cluster knows it, a stand-in built from the cluster's
// view (its ID and role, for its replicas to be found). nil when Valkey does not know it.
func (st *clusterState) rollMember(n *valkeyv1.ValkeyNode) *member {
	line, self, _ := st.servedBy(n)
	if self != nil {
		return self
	}
	if line == nil {
		return nil
	}
	return &member{node: n, addr: line.Addr, self: line}
}

// node is the ValkeyNode of the given name, nil when there is none.
func (st *clusterState) node(name string) *valkeyv1.ValkeyNode {
	for _, n := range st.nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}
