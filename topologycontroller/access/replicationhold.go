package access

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/acl"
	"valkey.io/operator/topologycontroller/round"
)

// replicationHeld is why m's replication user must stay off this round, or "" when it may
// be switched on. valkey-start starts a server without nodes.conf (a new node ID, none of
// the data its node may have had) with that user off (valkeystart.HoldsReplication): a
// replica still following the address of the node it replaced would otherwise be given its
// empty data set in a full sync. The hold ends once the operator has settled the server's
// shard: m is a replica itself (it serves nothing of its own), or no member of its shard is
// a replica of a node that no reachable member is (the node m replaced, whose replica the
// take-over promotes) and every member of the shard answered this round.
func replicationHeld(st *round.State, m *round.Member) string {
	if !m.Self.Primary() {
		return ""
	}
	for _, o := range st.Members {
		if o == m || o.Node.Spec.Shard != m.Node.Spec.Shard {
			continue
		}
		if !o.Reachable() {
			return fmt.Sprintf("%s, of the same shard, did not answer", o.Node.Name)
		}
		if p := o.Self.PrimaryID; p != "" && p != m.ID() && st.ByID[p] == nil {
			return fmt.Sprintf("%s, of the same shard, is a replica of %s, which no reachable node is (the node %s replaced, until its replica takes over)", o.Node.Name, p, m.Node.Name)
		}
	}
	return ""
}

// plannedReplication is the replication user as planned for m: switched on, unless m lists it
// off and replicationHeld says why it must stay so (the reason is returned). The operator
// never switches it off on a server that has it on.
func plannedReplication(st *round.State, m *round.Member, planned acl.User, listed map[string]acl.Listed) (acl.User, string) {
	l, ok := listed[planned.Name]
	if !ok || l.On {
		return planned, ""
	}
	why := replicationHeld(st, m)
	if why != "" {
		planned.On = false
	}
	return planned, why
}

// replicationHoldEvents reports the servers whose replication stays held (a Warning event on
// the node, and work in progress, so that the cluster's Progressing says why) and those
// whose replication was switched on this round.
func (k *Keeper) replicationHoldEvents(st *round.State, out *usersOutcome) {
	byName := map[string]*round.Member{}
	for _, m := range st.SortedMembers() {
		byName[m.Node.Name] = m
	}
	for _, name := range slices.Sorted(maps.Keys(out.held)) {
		msg := fmt.Sprintf("%s started without nodes.conf (a new node ID, without the data it may have had); no replica may sync from it while %s",
			name, out.held[name])
		k.Recorder.Eventf(byName[name].Node, st.Cluster, corev1.EventTypeWarning, valkeyv1.EventReplicationHeld, "ApplyUsers", "%s", msg)
		st.Wait(msg, round.Short)
	}
	applied := map[string]bool{}
	for _, name := range out.applied[acl.ReplicationUser] {
		applied[name] = true
	}
	for _, name := range out.released {
		if applied[name] {
			k.Recorder.Eventf(byName[name].Node, st.Cluster, corev1.EventTypeNormal, valkeyv1.EventReplicationReleased, "ApplyUsers",
				"replicas may sync from %s: the replication user it started without is switched on (its shard is settled)", name)
		}
	}
}
