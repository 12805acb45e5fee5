package round

import "fmt"

// ReplicasNotSpread names the members some member's view still shows as primaries without
// slots while they are replicas by their own account: a replica just attached (REPLICATE)
// is a primary without slots to its peers until gossip carries its new role, a second or
// so. Until then a client asking that peer sees one primary too many; the cluster is not
// settled.
func ReplicasNotSpread(st *State) []string {
	var why []string
	for _, m := range st.SortedMembers() {
		for _, b := range m.Bare {
			if b.Reachable() && !b.Self.Primary() {
				why = append(why, fmt.Sprintf("%s sees %s as a primary, not yet as the replica it is", m.Node.Name, b.Node.Name))
			}
		}
	}
	return why
}
