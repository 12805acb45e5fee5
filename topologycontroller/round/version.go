package round

import (
	"fmt"
	"sort"
	"strings"
)

// ServerVersion is the version m's server reports: Valkey's valkey_version, else
// "redis <redis_version>" (a Redis server), "" before it answered.
func (m *Member) ServerVersion() string {
	if v := m.Repl["valkey_version"]; v != "" {
		return v
	}
	if v := m.Repl["redis_version"]; v != "" {
		return "redis " + v
	}
	return ""
}

// ServerVersions sums up the versions the cluster's reachable servers run: "9.1.2", or
// "8.1.8 ×2, 9.1.2 ×4" while they differ (during an upgrade).
func ServerVersions(st *State) string {
	count := map[string]int{}
	for _, m := range st.SortedMembers() {
		if v := m.ServerVersion(); v != "" {
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
