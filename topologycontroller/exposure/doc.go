// Package exposure is the topology controller's concern for what guards and reaches a
// cluster's pods: a PodDisruptionBudget per shard (at most one pod of a shard evicted at a
// time), the cluster's NetworkPolicy (who may reach the client, bus and metrics ports) and
// its client and headless Services.
//
// It owns those three kinds of objects, made with the cluster as controller owner and
// written by server-side apply as the topology field manager; an object of one of the
// cluster's names that another controls is never taken over, only reported. It reads and
// writes no ValkeyNode, no status and no Valkey server: Writer.Apply returns an Outcome
// (why the NetworkPolicy or a Service is not as wanted) that the round puts in the
// cluster's status, and tells the user through the Round it is given (events). It keeps
// nothing in memory.
package exposure
