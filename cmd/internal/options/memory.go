package options

import (
	"fmt"
	"os"
	"runtime/debug"

	"k8s.io/apimachinery/pkg/api/resource"
)

// MemoryLimitShare is the share of --memory-limit given to the Go runtime as its soft
// memory limit: the rest is headroom for what the runtime does not count (the binary's
// text, thread stacks outside the heap) before the container is killed.
const MemoryLimitShare = 0.9

// memoryLimit parses --memory-limit: 0 when unset.
func memoryLimit(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0, fmt.Errorf("memory-limit must be a quantity such as 256Mi or a number of bytes, not %q: %w", s, err)
	}
	if q.Sign() < 0 {
		return 0, fmt.Errorf("memory-limit must not be negative, not %s", s)
	}
	return q.Value(), nil
}

// softMemoryLimit is the Go runtime's soft memory limit for the container's limit: a share
// of it, none (0) when no limit is given or $GOMEMLIMIT, which the runtime read itself,
// is set.
func softMemoryLimit(limit int64, gomemlimit string) int64 {
	if limit <= 0 || gomemlimit != "" {
		return 0
	}
	return int64(float64(limit) * MemoryLimitShare)
}

// GCPercent is the garbage collector's pace when $GOGC is not set: a new cycle once the heap
// has grown by half since the last one (Go's default is 100, a doubling). A controller's
// live heap is mostly its caches, a few tens of MiB, which a cycle scans in milliseconds:
// pacing at 50 keeps resident memory about a quarter lower for little CPU.
const GCPercent = 50

// applyGCPercent sets GCPercent unless $GOGC, which the runtime read itself, is set.
func applyGCPercent(gogc string) {
	if gogc == "" {
		debug.SetGCPercent(GCPercent)
	}
}

// applyMemorySettings sets the pace of the garbage collector (GCPercent, see applyGCPercent)
// and the soft memory limit from --memory-limit. Near the limit the
// garbage collector runs more often, but the runtime caps its CPU share (about half), so a
// live heap close to the limit slows the controller instead of thrashing it; GOGC stays at
// GCPercent below the limit.
func (m Manager) applyMemorySettings() {
	limit, _ := memoryLimit(m.MemoryLimit) // checked by Validate
	if soft := softMemoryLimit(limit, os.Getenv("GOMEMLIMIT")); soft > 0 {
		debug.SetMemoryLimit(soft)
	}
	applyGCPercent(os.Getenv("GOGC"))
}
