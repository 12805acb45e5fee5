package round

import (
	"strconv"
	"strings"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/clusternodes"
)

// Member is a ValkeyNode whose pod is ready, as its server sees itself. Of its view of the
// cluster only a summary is kept (see viewScan); the seed's view is also kept whole.
type Member struct {
	Node         *valkeyv1.ValkeyNode
	Addr         string
	Err          error
	Self         *clusternodes.Node
	View         []clusternodes.Node // the seed's (and a probed server's) whole view; nil otherwise
	Repl         map[string]string   // INFO server and replication
	ClusterState string              // cluster_state

	MyID   string              // CLUSTER MYID, before the view is read
	Lines  int                 // lines of its view
	Slots  int                 // slots its view shows owned (handshake lines left out)
	Unseen map[string]string   // member ID → the address it is seen at ("" when not at all), for the members it does not see well
	Others []clusternodes.Node // the lines of its view of nodes that are no reachable member
	Bare   []*Member           // the members it sees well (see Sees) as primaries without slots
	Seen   int                 // the last viewScan round that saw this member well
}

// Reachable tells whether m's server answered this round.
func (m *Member) Reachable() bool { return m != nil && m.Self != nil }

// ID is m's node ID as its server reports it ("" when it did not answer).
func (m *Member) ID() string {
	if m.Self == nil {
		return ""
	}
	return m.Self.ID
}

// Deleting tells whether m's ValkeyNode is being deleted.
func (m *Member) Deleting() bool { return !m.Node.DeletionTimestamp.IsZero() }

// Note records that m does not see the member with the given ID well: it sees it at addr,
// or ("" ) not at all, or in the handshake, or failing.
func (m *Member) Note(id, addr string) {
	if m.Unseen == nil {
		m.Unseen = map[string]string{}
	}
	m.Unseen[id] = addr
}

// Sees tells whether m's view has the member b at its address, past the handshake and not
// failed.
func (m *Member) Sees(b *Member) bool {
	_, unseen := m.Unseen[b.ID()]
	return m == b || !unseen
}

// Other is the line of id among the lines of m's view of nodes that are no member.
func (m *Member) Other(id string) *clusternodes.Node {
	for i := range m.Others {
		if m.Others[i].ID == id {
			return &m.Others[i]
		}
	}
	return nil
}

// AtomicMigration tells whether m's server migrates slots atomically (CLUSTER
// MIGRATESLOTS: Valkey 9.0 and later). Redis and older Valkey report no valkey_version
// of 9 or more (Valkey's redis_version is a fixed compatibility value).
func (m *Member) AtomicMigration() bool { return m.ValkeyMajor() >= 9 }

// ValkeyMajor is the major version of m's Valkey server; 0 for Redis.
func (m *Member) ValkeyMajor() int {
	major, _, _ := strings.Cut(m.Repl["valkey_version"], ".")
	n, err := strconv.Atoi(major)
	if err != nil {
		return 0
	}
	return n
}

// LinkUp tells whether a replica's replication link is up.
func (m *Member) LinkUp() bool { return m.Repl["master_link_status"] == "up" }
