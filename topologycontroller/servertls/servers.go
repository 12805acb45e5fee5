package servertls

import (
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"valkey.io/operator/topologycontroller/access"
)

// Servers keeps the TLS the servers of the clusters of one controller serve: the
// certificate Secret a cluster names (checked) or, with tls.generate, the CA and server
// certificate it generates, issues again before expiry or when a pod IP is not covered, and
// has the servers load without a restart. It keeps nothing between rounds.
type Servers struct {
	Client client.Client
	// APIReader reads the TLS Secrets past the cache (no Secret is cached).
	APIReader client.Reader
	Recorder  recorder.EventRecorder
	// Keeper writes the generated Secrets by the owned Secrets' rules.
	Keeper *access.Keeper
	// ClusterDomain is the cluster's DNS domain, in the names of generated certificates.
	ClusterDomain string
}
