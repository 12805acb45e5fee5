package topologycontroller

import (
	"time"

	"valkey.io/operator/internal/valkeyconf"
	"valkey.io/operator/topologycontroller/round"
)

// Valkey keeps a primary that was in a minority partition from reporting cluster_state ok
// for its cluster-node-timeout (at least 0.5 s, at most 5 s) after it last was one, so that
// it hears of a failover first. Every primary of a forming cluster was in one until its
// slots were assigned (it sees no primary with slots), so at the operator's 5000 ms default
// a new cluster answered CLUSTERDOWN for 5 s after its slots were all assigned, with
// nothing to hear of. While a cluster forms, its primaries run formingNodeTimeout instead:
// from the round that finds no slot assigned, until each reports cluster_state ok; then the
// live config sets the wanted value back (a restarted controller sets it on every server).
// A spec.config that names cluster-node-timeout is left as it is.
const (
	nodeTimeoutKey     = "cluster-node-timeout"
	formingNodeTimeout = "1000"
)

// formingPace is how soon a forming cluster (st.forming) is looked at again while Valkey
// settles a step (a MEET handshaking, gossip spreading): its servers answer within a cron
// tick (100 ms), and a new cluster waits on each of a few steps in turn, so round.Short
// (500 ms) each time would be most of its time to Ready. Only the rounds of a cluster
// forming are paced so; it lasts a second or two.
const formingPace = 150 * time.Millisecond

// paceForming brings a forming cluster's next look (round.Short) to formingPace.
func paceForming(st *clusterState) {
	if st.forming && st.Requeue == round.Short {
		st.Requeue = formingPace
	}
}

// slotsWithReplicas tells whether the slots phase runs in the round the replicate phase
// acted in: for a cluster with no slot assigned yet, whose replicas and first slots wait for
// nothing of each other; Valkey's wait before a new primary reports cluster_state ok (see
// above) then starts a round earlier.
func slotsWithReplicas(st *clusterState, acted string) bool {
	return acted == "replicate" && st.AssignedSlots() == 0
}

// formingTimeout tells whether m's server runs, or is to run, formingNodeTimeout: a primary
// not reporting cluster_state ok, in a cluster with no slot assigned yet, or given it when its
// cluster had none (wasForming: its live record says so).
func formingTimeout(st *clusterState, m *round.Member, config map[string]string, wasForming bool) bool {
	if _, byUser := valkeyconf.NamedLive(config)[nodeTimeoutKey]; byUser || m.Self == nil || !m.Self.Primary() || m.ClusterState == "ok" {
		return false
	}
	return wasForming || st.AssignedSlots() == 0
}
