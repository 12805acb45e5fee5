package status

import "math"

// Count32 is a count (of shards, nodes, slots, ports: all far below 2^31) as the int32 the
// API's status fields hold; it saturates rather than wraps.
func Count32(n int) int32 {
	if n > math.MaxInt32 {
		return math.MaxInt32
	}
	return int32(n) //nolint:gosec // G115: at most MaxInt32 here
}
