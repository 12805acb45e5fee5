package topologycontroller

import (
	"fmt"
	"sort"
	"strings"
)

// serverVersion is the version m's server reports: Valkey's valkey_version, else
// "redis <redis_version>" (a Redis server), "" before it answered.
func (m *member) serverVersion() string {
	if v := m.repl["valkey_version"]; v != "" {
		return v
	}
	if v := m.repl["redis_version"]; v != "" {
		return "redis " + v
	}
	return ""
}

// serverVersions sums up the versions the cluster's reachable servers run: "9.1.2", or
// "8.1.8 ×2, 9.1.2 ×4" while they differ (during an upgrade).
func serverVersions(st *clusterState) string {
	count := map[string]int{}
	for _, m := range st.sortedMembers() {
		if v := m.serverVersion(); v != "" {
			count[v]++
		}
	}
	if len(count) == 1 {
		for v := range count {
			return v
		}
	}
	parts := make([]string, 0, len(count))
	for v, n := range count {
		parts = append(parts, fmt.Sprintf("%s ×%d", v, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}
