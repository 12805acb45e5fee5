// Package roll decides the RollApproved of every node that asks to restart (RollPending,
// written by the workload controller): the nodes that serve no slots at once, then one
// node at a time, replicas first, each primary only after its most up-to-date replica took
// over (package failover), never while slots move or a node's claim is on its way
// (volumewait.go); an approval is withdrawn when what it was given for changed, and cleared
// once the node is back and joined. The order is package planner's (RollOrder).
//
// It reads the round (package round), the nodes' conditions and the servers; it writes only
// RollApproved, through the round (State.Roll, or ApplyNow before a failover starts). It
// keeps nothing between rounds.
package roll
