// Package membership decides who is in a cluster and as what: CLUSTER MEET of the members
// the seed does not know (Meet), CLUSTER REPLICATE of each shard's other members to its
// primary, flushing a member without slots first only when every key it holds, in every
// database, is held by the slots' owners (Replicate, FlushIfHeldElsewhere), an empty primary
// for a shard whose nodes all follow other shards' primaries (DetachStray), CLUSTER FORGET of
// IDs no node stands for and that own nothing (Forget), a deleted node's hand-over and its Drained (Drain,
// DrainedStatus) and the deletion of the nodes a smaller spec no longer wants (ScaleIn).
//
// It reads the round (package round) and talks to the servers; of the API it only deletes
// the ValkeyNodes a scale-in removes. Failovers are package failover's; slot moves are
// package migration's. It keeps nothing between rounds.
package membership
