package planner

import (
	"sort"

	"valkey.io/operator/internal/clusternodes"
)

// ExpandSlots lists every slot of ranges.
func ExpandSlots(rs []clusternodes.SlotRange) []int {
	var out []int
	for _, r := range rs {
		for s := r.Start; s <= r.End; s++ {
			out = append(out, s)
		}
	}
	return out
}

// CompactSlots turns slots into sorted inclusive ranges.
func CompactSlots(slots []int) []clusternodes.SlotRange {
	s := append([]int(nil), slots...)
	sort.Ints(s)
	var out []clusternodes.SlotRange
	for _, v := range s {
		if n := len(out); n > 0 && out[n-1].End+1 == v {
			out[n-1].End = v
			continue
		} else if n > 0 && out[n-1].End == v {
			continue
		}
		out = append(out, clusternodes.SlotRange{Start: v, End: v})
	}
	return out
}
