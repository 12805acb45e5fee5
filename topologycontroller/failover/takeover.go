package failover

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/clusternodes"
	"valkey.io/operator/topologycontroller/round"
)

// TakeOver gives the slots of a primary lost for good to its most up-to-date replica with
// CLUSTER FAILOVER TAKEOVER, in a cluster where Valkey cannot elect that replica itself: an
// election needs the votes of a majority of the slot-owning primaries, which a cluster of
// one or two shards no longer has when one of them is lost. It acts only on proof that
// nothing is lost (lostForGood, takeoverCandidate) and says so in an event.
func (fo *Failovers) TakeOver(ctx context.Context, st *round.State) (bool, error) {
	if st.Seed == nil || electable(st) {
		return false, nil
	}
	for _, dead := range lostForGood(st) {
		to, why := takeoverCandidate(st, dead)
		if to == nil {
			st.Wait(why, 5*time.Second)
			continue
		}
		fo.Event(st, to.Node, corev1.EventTypeWarning, valkeyv1.EventFailoverTakeover, "ClusterFailover",
			"the primary %s of shard %d is lost for good (every node of the shard answers with another ID) and no majority of primaries is left to elect a replica: %s, in sync at replication offset %d, takes over with CLUSTER FAILOVER TAKEOVER",
			round.ShortID(dead), to.Node.Spec.Shard, to.Node.Name, round.ReplicationOffset(to.Repl))
		if err := st.Conns.OK(ctx, to.Addr, "CLUSTER", "FAILOVER", "TAKEOVER"); err != nil {
			return false, fmt.Errorf("CLUSTER FAILOVER TAKEOVER on %s: %w", to.Node.Name, err)
		}
		st.Wait(fmt.Sprintf("%s takes over the slots of its lost primary %s", to.Node.Name, round.ShortID(dead)), time.Second)
		return true, nil
	}
	return false, nil
}

// electable tells whether a majority of the slot-owning primaries in the seed's view is
// alive: Valkey then elects a failed primary's replica itself.
func electable(st *round.State) bool {
	owners, alive := 0, 0
	for _, n := range st.View {
		if n.Primary() && n.SlotCount() > 0 {
			owners++
			if !n.Failed() && !n.Flags["fail?"] {
				alive++
			}
		}
	}
	return alive >= owners/2+1
}

// lostForGood are the IDs of slot-owning primaries seen failing (fail, or only fail?: with
// no majority of primaries left, none is ever marked fail) whose shard's ValkeyNodes all
// answer with other IDs: the server that had the ID kept nothing of it (it came back empty,
// on a new claim or a new Kubernetes node), so it cannot come back with newer data. A shard
// with a node that does not answer yet may still bring it back (valkey-start then fences
// the restarted primary itself): nothing is done.
func lostForGood(st *round.State) []string {
	var out []string
	for id, n := range st.View {
		if !n.Primary() || n.SlotCount() == 0 || !(n.Failed() || n.Flags["fail?"]) || st.ByID[id] != nil {
			continue
		}
		shard, ok := followedShard(st, id)
		if ok && shardAnswers(st, shard) {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

// followedShard is the shard of the members that follow id.
func followedShard(st *round.State, id string) (int32, bool) {
	for _, m := range st.SortedMembers() {
		if !m.Self.Primary() && m.Self.PrimaryID == id {
			return m.Node.Spec.Shard, true
		}
	}
	return 0, false
}

// shardAnswers tells whether every ValkeyNode of the shard has a reachable server.
func shardAnswers(st *round.State, shard int32) bool {
	for _, n := range st.Nodes {
		if n.Spec.Shard == shard && !st.Members[n.Name].Reachable() {
			return false
		}
	}
	return true
}

// takeoverCandidate is the replica of dead with the highest replication offset among those
// that completed a sync with it (clusternodes.InSyncReplica); nil, with why, when none did:
// none holds the shard's data, and its slots stay unavailable.
func takeoverCandidate(st *round.State, dead string) (*round.Member, string) {
	var best *round.Member
	var bestOffset int64
	var refused []string
	for _, m := range st.SortedMembers() {
		if m.Self.Primary() || m.Self.PrimaryID != dead || m.Deleting() {
			continue
		}
		offset, err := clusternodes.InSyncReplica(m.Repl)
		if err != nil {
			refused = append(refused, m.Node.Name+": "+err.Error())
			continue
		}
		if best == nil || offset > bestOffset {
			best, bestOffset = m, offset
		}
	}
	if best != nil {
		return best, ""
	}
	return nil, fmt.Sprintf("the primary %s is lost for good and none of its replicas completed a sync with it (%v): its slots stay unavailable; no replica is promoted on data it may not have",
		round.ShortID(dead), refused)
}
