// Package migration moves hash slots between the primaries of a cluster: on scale-out and
// scale-in, when a shard is drained, when a lost primary's slots must be given again, and
// when an interrupted migration is found. It plans with package planner, moves atomically
// (CLUSTER MIGRATESLOTS, Valkey 9 and later) or key by key (SETSLOT + MIGRATE in each
// database that holds keys, a batch acknowledged by a replica of the target before the
// next), resumes and settles what a
// previous round left open, and backs off from slots whose keys will not move (stallBook,
// the only record it keeps between rounds).
//
// It reads the round (package round) and the servers; it writes no API object and no status:
// a Round returns what it found (Found), and events go through the Mover's Event. Whether a
// primary may be emptied before it takes slots is membership's rule, asked through Flush.
package migration
