package planner

import "sort"

// RollCandidate is a node waiting for roll approval.
type RollCandidate struct {
	Name string
	// Primary is true for a primary that owns slots (it is failed over before it rolls).
	Primary bool
}

// RollOrder orders the nodes waiting for a roll: replicas (and primaries without slots)
// first, then primaries, each by name.
func RollOrder(cs []RollCandidate) []RollCandidate {
	out := append([]RollCandidate(nil), cs...)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Primary != out[j].Primary {
			return !out[i].Primary
		}
		return out[i].Name < out[j].Name
	})
	return out
}
