// Package backup runs ValkeyBackups: within a cluster's round (Saver.Run) it saves a point
// on an in-sync replica of every shard (catch up, BGSAVE, the offset recorded as the node's
// saved point), waits for the volume controller to cut each shard's VolumeSnapshot, and
// reports the ValkeyBackup's phase, shards, conditions and events; while a backup saves its
// points, slot moves wait (Underway). Its own small controller (Reconciler) reports the
// backups whose cluster is missing or went away. A cluster restored from a backup
// (spec.restoreFrom) is planned here too (PlanRestore, RestorePlan.NodeRestore): its
// restored nodes join before anything else happens (HoldForRestore), and its Restored is
// decided each round (NoteRestore).
//
// It reads the round (package round), the cluster's ValkeyBackups and the servers; it
// writes only ValkeyBackups' status and events. The saved points the nodes carry are
// returned (Round.SavedPoints) for the reconciler's node status; its one record between
// rounds is the BGSAVEs under way, by backup and shard.
package backup
