package membership

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/topologycontroller/round"
)

// forgettable lists the IDs of the seed's view that should be forgotten: no ValkeyNode
// stands for them any more, they are unreachable, own no slots and no node follows them.
// An ID that still owns slots or has replicas is never forgotten.
func forgettable(st *round.State, reachable func(addr string) bool) []string {
	reported := st.ReportedIDs()
	followed := map[string]bool{}
	for _, n := range st.View {
		if n.PrimaryID != "" {
			followed[n.PrimaryID] = true
		}
	}
	for _, m := range st.ByID {
		if m.Self.PrimaryID != "" {
			followed[m.Self.PrimaryID] = true
		}
	}
	var out []string
	for id, n := range st.View {
		if n.Myself() || reported[id] || st.ByID[id] != nil || n.SlotCount() > 0 || followed[id] {
			continue
		}
		if !n.Failed() && n.Addr != "" && reachable(n.Addr) {
			continue
		}
		out = append(out, id)
	}
	return out
}

// Forget removes stale IDs from every member (CLUSTER FORGET has to reach every node, or
// gossip brings the ID back).
func (ms *Members) Forget(ctx context.Context, st *round.State) (bool, error) {
	if st.Seed == nil {
		return false, nil
	}
	ids := forgettable(st, func(addr string) bool { return dialable(ctx, addr, ms.DialTimeout) })
	if len(ids) == 0 {
		return false, nil
	}
	for _, id := range ids {
		for _, m := range st.SortedMembers() {
			if m.ID() == id || m.Other(id) == nil {
				continue
			}
			if err := st.Conns.OK(ctx, m.Addr, "CLUSTER", "FORGET", id); err != nil && !strings.Contains(err.Error(), "Unknown node") {
				return true, err
			}
		}
		ms.Event(st, nil, corev1.EventTypeNormal, valkeyv1.EventForget, "ClusterForget", "forgot node ID %s: no ValkeyNode reports it and it is unreachable", id)
	}
	st.Wait("forgetting stale node IDs", round.Short)
	return true, nil
}
