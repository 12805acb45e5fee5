// Package failover hands a primary's slots to its most up-to-date replica: planned
// (CLUSTER FAILOVER before a roll, a drain or a scale-in: Start, with a timeout and a
// doubling backoff between tries, reported by AllStalled and Stalled), settled once the
// roles switched (Settle), and, when a primary's pod is gone and its shard elects nobody,
// by takeover (CLUSTER FAILOVER TAKEOVER: TakeOver, the crash fencing of a lost primary).
//
// It reads the round (package round) and talks to the servers; it writes no API object and
// no status. Its one record between rounds is the tries under way or backing off, by
// cluster and node; a restarted controller forgets them and finds the roles as they are.
package failover
