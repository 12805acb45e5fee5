package workloadcontroller

import (
	"errors"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/valkeyconf"
)

// Paths inside the pod.
const (
	// DataDir is where the node's volume (or emptyDir) is mounted: RDB, AOF and nodes.conf.
	DataDir = "/data"
	// ConfigDir is where the node's ConfigMap is mounted read-only.
	ConfigDir = "/etc/valkey"
	// ConfigFile is the key of valkey.conf in the node's ConfigMap.
	ConfigFile = "valkey.conf"
	// AuthDir is a memory-backed emptyDir where valkey-start writes AuthFile, which
	// valkey.conf includes: a cluster node's users (the operator's own, masteruser and
	// masterauth, the ACL Secret's), or the password as requirepass and masterauth.
	AuthDir  = "/run/valkey-auth"
	AuthFile = AuthDir + "/auth.conf"
	// ClientPort is the port clients and the topology controller connect to.
	ClientPort = valkeyconf.ClientPort
	// BusPort is the cluster bus port.
	BusPort = valkeyconf.BusPort
	// MetricsPort is valkey-start's /metrics (see internal/volumeusage).
	MetricsPort = valkeyconf.MetricsPort
)

// ConfigError names the spec.config key (or persistence field) that was refused.
type ConfigError = valkeyconf.ConfigError

// renderConfig renders the node's valkey.conf from its spec: persistence decides RDB and
// AOF, spec.config is merged, a cluster node or a node with a password includes AuthFile
// (the config itself never holds a password), and announce: hostname announces the pod's
// DNS name under the cluster domain. A refused config is a *ConfigError.
func renderConfig(node *valkeyv1.ValkeyNode, clusterDomain string) (string, error) {
	return renderConfigOf(node, clusterDomain, node.Spec.Config, false)
}

// restartConfig is what of the node's valkey.conf needs a restart when it changes: a
// cluster node's config without the keys the topology controller applies live (CONFIG SET,
// see valkeyconf.LiveKeys); a node outside any cluster restarts for every key of
// spec.config. Neither restarts for the operator's own live defaults (cluster-node-timeout),
// so that a new one, or a new operator bringing one, restarts nothing: the topology
// controller sets it on a cluster's running servers.
func restartConfig(node *valkeyv1.ValkeyNode, clusterDomain string) (string, error) {
	config := node.Spec.Config
	if appliesLive(node) {
		config = valkeyconf.WithoutLive(config)
	}
	return renderConfigOf(node, clusterDomain, config, true)
}

// appliesLive tells whether the node's live keys are applied without a restart: a cluster
// node's are, by the topology controller (ConfigApplied).
func appliesLive(node *valkeyv1.ValkeyNode) bool { return node.Spec.ClusterName != "" }

// renderConfigOf renders the node's valkey.conf with config as its spec.config (without the
// operator's live defaults when omitLiveDefaults).
func renderConfigOf(node *valkeyv1.ValkeyNode, clusterDomain string, config map[string]string, omitLiveDefaults bool) (string, error) {
	spec := &node.Spec
	p := valkeyconf.Params{DataDir: DataDir, Config: config, OmitLiveDefaults: omitLiveDefaults}
	if spec.Announce == valkeyv1.AnnounceHostname {
		p.AnnounceHostname = node.PodDNSName(clusterDomain)
	}
	if spec.PasswordSecret != nil && spec.PasswordSecret.Name != "" || spec.ClusterName != "" {
		p.AuthFile = AuthFile
	}
	p.TLS = tlsParams(spec)
	if ps := spec.Persistence; ps != nil {
		p.Persistence = true
		p.RDB, p.AOF = ps.RDBEnabled(), ps.AOFEnabled()
		if ps.RDB != nil {
			p.SavePoints = ps.RDB.SavePoints
		}
		if ps.AOF != nil {
			p.Fsync = string(ps.AOF.Fsync)
		}
	}
	return valkeyconf.Render(p)
}

// asConfigError returns err as a *ConfigError, nil when it is another error.
func asConfigError(err error) *ConfigError {
	var ce *ConfigError
	if errors.As(err, &ce) {
		return ce
	}
	return nil
}
