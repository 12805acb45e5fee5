// Package planner holds the topology controller's pure planning: how the 16384 hash slots
// are split among primaries and which slots move where when the set of primaries changes
// (Slots, EvenCounts), slot lists as ranges (CompactSlots, ExpandSlots), and the order in
// which nodes waiting for a roll are approved (RollOrder).
//
// It owns no state and talks to nothing: no Kubernetes client, no Valkey connection, no
// clock. Everything it returns is a function of its arguments, so it is tested with plain
// unit tests; the concerns that act on a plan (migration, roll) live in the topology
// controller.
package planner
