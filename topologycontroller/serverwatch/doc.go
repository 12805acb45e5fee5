// Package serverwatch follows each cluster's servers between reconciles. Valkey is no watch
// source: a primary killed, a failover, a partition or a node back shows in its servers'
// CLUSTER NODES long before the next resync. The watcher asks one server of every cluster
// a round just looked at for CLUSTER NODES each interval, and wakes the cluster's reconcile
// when what it shows changed (a flag, a role, a link, an epoch, the slots) or the servers
// asked first stopped answering, so that the cluster's status follows the servers within
// about one interval. It writes nothing: one command per cluster per interval is its cost.
//
// Owns: the look between rounds at each registered cluster's servers (one CLUSTER NODES per
// interval) and the wake of the cluster's reconcile when it changed. It may not write any
// object nor act on a server: the round decides (see docs/contract.md, the settled cluster's
// resync).
package serverwatch
