package migration

import (
	"fmt"

	"valkey.io/operator/topologycontroller/round"
)

// SlotsNotSpread lists the primaries that report more slots of their own than the seed's
// view gives them: slots assigned a round ago that gossip has not brought to the seed yet.
func SlotsNotSpread(st *round.State) []string {
	var why []string
	for _, m := range st.SortedMembers() {
		if !m.Self.Primary() || m == st.Seed {
			continue
		}
		seen := 0
		if n := st.View[m.ID()]; n != nil {
			seen = n.SlotCount()
		}
		if own := m.Self.SlotCount(); own > seen {
			why = append(why, fmt.Sprintf("%s owns %d slots, the seed sees %d", m.Node.Name, own, seen))
		}
	}
	return why
}
