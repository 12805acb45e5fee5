package round

import "fmt"

// ReplicasNotSpread names the members some member's view still shows as primaries without
// slots while they are replicas by their own account: a replica just attached (REPLICATE)
// is a primary without slots to its peers until gossip carries its new role, a second or
// so. Until then a client asking that peer sees one primary too many; the cluster is not
// settled. A view that marks the replica failed, or does not have it at its address, is
// left out: that member does not see it (Member.Sees), which is reported as such.
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
