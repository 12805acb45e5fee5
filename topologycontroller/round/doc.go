// Package round is what one reconcile of a ValkeyCluster knows and how it talks to the
// servers: the connections of the round (Conns: the operator's user, TLS, every command
// counted), what each server says of itself and of the cluster (Member, Observe: ID, INFO,
// CLUSTER INFO, each view summarised and the seed's kept whole), each shard's primary, and
// the node status the round will apply (State.Out, State.Roll).
//
// It owns the round's observation and nothing else: it decides nothing, writes no API
// object and keeps nothing between rounds (Conns are closed when the round ends). The
// phases in the packages beside it read a State and return what they found; the
// reconciler turns that into status.
package round
