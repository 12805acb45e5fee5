// Package servertls keeps the TLS a cluster's servers serve (spec.tls): Bundle reads the
// certificate Secret the cluster names and checks it (package certs: keys, chain, expiry,
// the names it must cover), or with tls.generate makes the cluster's CA (<cluster>-ca) and
// server certificate (<cluster>-tls) and issues it again before it expires or when a pod IP
// is not covered; Reload has every server that serves an older certificate load its files
// again without a restart and returns TLSReady.
//
// It reads the cluster, its nodes' pod IPs, its Secrets (past the cache) and the servers;
// it writes only the generated Secrets (through access.Keeper) and events. An unusable
// Secret is an Error the reconciler reports on the cluster. It keeps nothing between
// rounds.
package servertls
