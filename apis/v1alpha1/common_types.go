// Package v1alpha1 holds the valkey.io/v1alpha1 API: ValkeyCluster and ValkeyNode, the
// condition types and reasons each controller owns, the label keys, and the naming
// functions that make object names a stable API.
//
// +kubebuilder:object:generate=true
// +groupName=valkey.io
package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the API group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "valkey.io", Version: "v1alpha1"}

	// SchemeBuilder registers the kinds of this package with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the kinds of this package to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// addKnownTypes registers every kind of this package under GroupVersion. The package
// depends only on k8s.io/apimachinery, so that clients can import it cheaply.
func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&ValkeyCluster{}, &ValkeyClusterList{},
		&ValkeyNode{}, &ValkeyNodeList{},
		&ValkeyBackup{}, &ValkeyBackupList{},
		&ValkeyBackupSchedule{}, &ValkeyBackupScheduleList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

// WorkloadType is the kind of workload that runs a ValkeyNode's server.
// +kubebuilder:validation:Enum=StatefulSet;Deployment
type WorkloadType string

const (
	// WorkloadStatefulSet runs each node as a one-replica StatefulSet (the default; required
	// with persistence).
	WorkloadStatefulSet WorkloadType = "StatefulSet"
	// WorkloadDeployment runs each node as a one-replica Deployment (no persistence).
	WorkloadDeployment WorkloadType = "Deployment"
)

// ReclaimPolicy says what happens to a node's PersistentVolumeClaim once the node is deleted.
// +kubebuilder:validation:Enum=Retain;Delete
type ReclaimPolicy string

const (
	// ReclaimRetain keeps the claim (and its data) after the node is gone; a node of the same
	// name and cluster created later reuses it.
	ReclaimRetain ReclaimPolicy = "Retain"
	// ReclaimDelete deletes the claim once the node is drained and deleted.
	ReclaimDelete ReclaimPolicy = "Delete"
)

// AppendFsync is Valkey's appendfsync policy.
// +kubebuilder:validation:Enum=always;everysec;no
type AppendFsync string

// PersistenceSpec enables persistent storage for Valkey data (RDB, AOF and nodes.conf).
// Its presence enables persistence; it cannot be removed once set.
// +kubebuilder:validation:XValidation:rule="!has(self.autoGrow) || quantity(string(self.autoGrow.maxSize)).compareTo(quantity(string(self.size))) >= 0",message="persistence.autoGrow.maxSize must be at least persistence.size"
type PersistenceSpec struct {
	// Size of each node's volume. It may grow (the claim is expanded online when its
	// StorageClass allows it) but never shrink.
	// +required
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).compareTo(quantity('1Mi')) >= 0",message="persistence.size must be at least 1Mi"
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).compareTo(quantity(string(oldSelf))) >= 0",message="persistence.size may only grow"
	Size resource.Quantity `json:"size"`

	// StorageClassName of the claims. The cluster's default StorageClass when omitted.
	// It may be corrected while a node's claim has never been bound (the unbound claim is
	// replaced by one of the new class); a claim that is bound keeps its class, and the
	// node reports VolumeReady=False, StorageClassImmutable until the change is reverted.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	StorageClassName *string `json:"storageClassName,omitempty"`

	// ReclaimPolicy of a node's claim once the node is deleted: Retain (default) keeps it,
	// Delete deletes it after the node is drained.
	// +optional
	// +kubebuilder:default=Retain
	ReclaimPolicy ReclaimPolicy `json:"reclaimPolicy,omitempty"`

	// RDB snapshot settings. Snapshots are on by default with persistence.
	// +optional
	RDB *RDBSpec `json:"rdb,omitempty"`

	// AOF (append-only file) settings. Off by default.
	// +optional
	AOF *AOFSpec `json:"aof,omitempty"`

	// AutoGrow lets the volume controller grow a node's claim online when the volume's
	// usage, measured in the pod, passes a threshold: by an increment, never past maxSize.
	// size stays the floor every claim has; a claim grown past it keeps its size. Off when
	// omitted. See docs/contract.md, "Automatic growth".
	// +optional
	AutoGrow *AutoGrowSpec `json:"autoGrow,omitempty"`
}

// AutoGrowSpec is when and how far a node's claim grows on its own.
type AutoGrowSpec struct {
	// ThresholdPercent of the volume in use (bytes used of the file system's size, as
	// measured in the pod) at or above which the claim grows. A save (BGSAVE, an AOF rewrite)
	// writes the data set again beside the one on disk, so at most 50 keeps room for one
	// at any time; see docs/volumes.md for choosing it from maxmemory.
	// +optional
	// +kubebuilder:default=50
	// +kubebuilder:validation:Minimum=10
	// +kubebuilder:validation:Maximum=90
	ThresholdPercent int32 `json:"thresholdPercent,omitempty"`

	// Increment of one growth: a percentage of the claim's current size ("50%", the
	// default) or a quantity ("2Gi").
	// +optional
	// +kubebuilder:default="50%"
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^[1-9][0-9]{0,2}%$') || (!self.endsWith('%') && isQuantity(self) && quantity(self).isGreaterThan(quantity('0')))",message="persistence.autoGrow.increment must be a percentage from 1% to 999% or a positive quantity such as 2Gi"
	Increment string `json:"increment,omitempty"`

	// MaxSize no claim grows past (at least persistence.size).
	// +required
	MaxSize resource.Quantity `json:"maxSize"`
}

// Threshold is the usage percentage at or above which a claim grows (the default when unset).
func (a *AutoGrowSpec) Threshold() int32 {
	if a == nil || a.ThresholdPercent == 0 {
		return DefaultAutoGrowThreshold
	}
	return a.ThresholdPercent
}

// DefaultAutoGrowThreshold and DefaultAutoGrowIncrement are the defaults of AutoGrowSpec.
const (
	DefaultAutoGrowThreshold = 50
	DefaultAutoGrowIncrement = "50%"
)

// RDBSpec configures RDB snapshots.
type RDBSpec struct {
	// Enabled turns RDB snapshots on (the default with persistence). The server also
	// snapshots on a clean shutdown so that a restarted replica resyncs partially.
	// +optional
	// +kubebuilder:default=true
	Enabled *bool `json:"enabled,omitempty"`

	// SavePoints are Valkey `save` rules, each "<seconds> <changes>".
	// Default: ["3600 1", "300 100", "60 10000"].
	// +optional
	// +kubebuilder:validation:MaxItems=10
	// +kubebuilder:validation:items:Pattern=`^[0-9]+ [0-9]+$`
	SavePoints []string `json:"savePoints,omitempty"`
}

// AOFSpec configures the append-only file.
type AOFSpec struct {
	// Enabled turns the append-only file on.
	// +optional
	Enabled bool `json:"enabled,omitempty"`

	// Fsync is the appendfsync policy (default everysec).
	// +optional
	// +kubebuilder:default=everysec
	Fsync AppendFsync `json:"fsync,omitempty"`
}

// RDBEnabled tells whether RDB snapshots are on for this persistence spec.
func (p *PersistenceSpec) RDBEnabled() bool {
	if p == nil {
		return false
	}
	return p.RDB == nil || p.RDB.Enabled == nil || *p.RDB.Enabled
}

// AOFEnabled tells whether the append-only file is on for this persistence spec.
func (p *PersistenceSpec) AOFEnabled() bool {
	return p != nil && p.AOF != nil && p.AOF.Enabled
}

// EffectiveReclaimPolicy returns the reclaim policy, Retain when unset.
func (p *PersistenceSpec) EffectiveReclaimPolicy() ReclaimPolicy {
	if p == nil || p.ReclaimPolicy == "" {
		return ReclaimRetain
	}
	return p.ReclaimPolicy
}

// SecretKeyRef names a key in a Secret of the object's namespace.
type SecretKeyRef struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`
	// Key in the Secret (default "password").
	// +optional
	// +kubebuilder:default=password
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key,omitempty"`
}

// ConfigValue is an alias of string, so that spec.config is a map[string]string in Go while
// its values carry a maxLength in the CRD, which bounds the cost of the rules that read them.

// ConfigValue is the value of one key of spec.config: one line of valkey.conf.
// +kubebuilder:validation:MaxLength=4096
type ConfigValue = string

// ServerSpec is how a Valkey server runs: the part of a ValkeyCluster's spec that every one
// of its ValkeyNodes carries, and the spec of a ValkeyNode besides its place in the cluster.
type ServerSpec struct {
	// Image of the Valkey server. Its tag names the version at its start
	// (valkey/valkey:9.1.2; a digest may follow to pin it): on a running cluster, an image of
	// an older major than the servers run, or whose version cannot be read (no tag, a digest
	// alone, latest), is held from the nodes until the cluster is annotated
	// valkey.io/allow-downgrade=true.
	// +optional
	// +kubebuilder:default="valkey/valkey:9.1.2"
	Image string `json:"image,omitempty"`

	// Resources of each server container.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// Config holds valkey.conf directives merged into every node's rendered configuration.
	// Keys are directive names (compared without case: two spellings of one key are
	// refused); values are one line of at most 4096 characters (no tab, newline or other
	// control character). Keys the operator sets itself or does not support (dir, port,
	// include, rename-command, cluster-announce-*, the password and TLS settings, save and
	// appendonly: docs/configuration.md lists them) are refused, and so is a maxclients
	// below 64.
	// +optional
	// +kubebuilder:validation:MaxProperties=200
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^[A-Za-z0-9][A-Za-z0-9-]*$'))",message="config: a key is a directive name made of letters, digits and dashes",messageExpression=`'config: key "' + self.filter(k, !k.matches('^[A-Za-z0-9][A-Za-z0-9-]*$'))[0] + '" is not a directive name: a key is made of letters, digits and dashes'`
	// +kubebuilder:validation:XValidation:rule=`self.all(k, !(k.lowerAscii() in ['aclfile', 'appenddirname', 'appendfilename', 'appendfsync', 'appendonly', 'bind', 'bind-source-addr', 'cluster-config-file', 'cluster-enabled', 'cluster-port', 'cluster-preferred-endpoint-type', 'daemonize', 'dbfilename', 'dir', 'enable-debug-command', 'enable-module-command', 'enable-protected-configs', 'include', 'loadmodule', 'logfile', 'masterauth', 'masteruser', 'pidfile', 'port', 'primaryauth', 'primaryuser', 'protected-mode', 'rename-command', 'replicaof', 'requirepass', 'save', 'shutdown-on-sigint', 'shutdown-on-sigterm', 'slaveof', 'tls-auth-clients', 'tls-ca-cert-dir', 'tls-ca-cert-file', 'tls-cert-file', 'tls-client-cert-file', 'tls-client-key-file', 'tls-cluster', 'tls-key-file', 'tls-port', 'tls-replication', 'user'] || ['cluster-announce-', 'replica-announce-', 'slave-announce-', 'unixsocket'].exists(p, k.lowerAscii().startsWith(p))))`,message="config: a key the operator sets itself, or does not support, is refused (docs/configuration.md lists them)",messageExpression=`'config: key "' + self.filter(k, (k.lowerAscii() in ['aclfile', 'appenddirname', 'appendfilename', 'appendfsync', 'appendonly', 'bind', 'bind-source-addr', 'cluster-config-file', 'cluster-enabled', 'cluster-port', 'cluster-preferred-endpoint-type', 'daemonize', 'dbfilename', 'dir', 'enable-debug-command', 'enable-module-command', 'enable-protected-configs', 'include', 'loadmodule', 'logfile', 'masterauth', 'masteruser', 'pidfile', 'port', 'primaryauth', 'primaryuser', 'protected-mode', 'rename-command', 'replicaof', 'requirepass', 'save', 'shutdown-on-sigint', 'shutdown-on-sigterm', 'slaveof', 'tls-auth-clients', 'tls-ca-cert-dir', 'tls-ca-cert-file', 'tls-cert-file', 'tls-client-cert-file', 'tls-client-key-file', 'tls-cluster', 'tls-key-file', 'tls-port', 'tls-replication', 'user'] || ['cluster-announce-', 'replica-announce-', 'slave-announce-', 'unixsocket'].exists(p, k.lowerAscii().startsWith(p))))[0] + '" is set by the operator itself or not supported (docs/configuration.md lists these keys)'`
	// +kubebuilder:validation:XValidation:rule=`self.all(k, !self.exists(j, j != k && size(j) == size(k) && j.lowerAscii() == k.lowerAscii()))`,message="config: two keys name one directive (keys are compared without case): keep one spelling",messageExpression=`'config: key "' + self.filter(k, self.exists(j, j != k && size(j) == size(k) && j.lowerAscii() == k.lowerAscii()))[0] + '" and another spelling of it name one directive (keys are compared without case): keep one spelling'`
	// +kubebuilder:validation:XValidation:rule=`self.all(k, !self[k].matches('[\\x00-\\x1f\\x7f-\\x9f]'))`,message="config: a value may not contain a tab, newline, carriage return or other control character",messageExpression=`'config: the value of "' + self.filter(k, self[k].matches('[\\x00-\\x1f\\x7f-\\x9f]'))[0] + '" contains a tab, newline, carriage return or other control character: a value is one line of valkey.conf'`
	// +kubebuilder:validation:XValidation:rule=`self.all(k, !(k.lowerAscii() == 'maxclients' && !(self[k].trim().matches('^[+]?[0-9]{1,18}$') && int(self[k].trim()) >= 64)))`,message="config: maxclients must be a whole number of at least 64",messageExpression=`'config: key "' + self.filter(k, k.lowerAscii() == 'maxclients' && !(self[k].trim().matches('^[+]?[0-9]{1,18}$') && int(self[k].trim()) >= 64))[0] + '" must be a whole number of at least 64: the operator, the probes and replication need connections of their own'`
	Config map[string]ConfigValue `json:"config,omitempty"`

	// WorkloadType runs nodes as StatefulSets (default) or Deployments.
	// +optional
	// +kubebuilder:default=StatefulSet
	WorkloadType WorkloadType `json:"workloadType,omitempty"`

	// Persistence gives every node a PersistentVolumeClaim mounted at /data. Adding it to a
	// running cluster creates the claims and rolls the nodes safely; it cannot be removed.
	// +optional
	Persistence *PersistenceSpec `json:"persistence,omitempty"`

	// PasswordSecret holds the password of Valkey's default user. On a ValkeyCluster it may
	// change (the new password is applied live; for a change without refused clients, list
	// the default user in spec.users with both Secrets instead), and when omitted the
	// operator generates the Secret <cluster>-auth, which every node then names. A
	// ValkeyNode outside any cluster without it runs without a password.
	// +optional
	PasswordSecret *SecretKeyRef `json:"passwordSecret,omitempty"`

	// TLS turns TLS on for clients, replication and the cluster bus. It is fixed when the
	// cluster is created.
	// +optional
	// +kubebuilder:validation:XValidation:rule="has(self.secretName) == has(oldSelf.secretName) && (!has(self.secretName) || self.secretName == oldSelf.secretName)",message="tls.secretName cannot change: servers trusting different CAs cannot talk"
	TLS *TLSSpec `json:"tls,omitempty"`

	// Announce is how nodes name themselves to clients in redirects: ip (default) or
	// hostname (their DNS names under the cluster's headless Service).
	// +optional
	Announce Announce `json:"announce,omitempty"`

	// Scheduling places the pods: shard anti-affinity, node selector, affinity, tolerations,
	// priority class and topology spread. Changing it rolls the pods one at a time.
	// +optional
	Scheduling *SchedulingSpec `json:"scheduling,omitempty"`

	// ImagePullSecrets of the pods, to pull the server image from a private registry.
	// +optional
	// +listType=atomic
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`

	// PodSecurityContext overrides the pods' security context field by field: each field
	// set here replaces the default's field of the same name, the others keep the default
	// (runAsNonRoot, runAsUser/runAsGroup/fsGroup of the workload controller's --run-as-user,
	// fsGroupChangePolicy OnRootMismatch, seccomp RuntimeDefault).
	// +optional
	PodSecurityContext *corev1.PodSecurityContext `json:"podSecurityContext,omitempty"`

	// ContainerSecurityContext overrides the security context of every container of the
	// pods (the server and the init container) field by field, as podSecurityContext does.
	// The default: runAsNonRoot, read-only root filesystem, no privilege escalation, all
	// capabilities dropped.
	// +optional
	ContainerSecurityContext *corev1.SecurityContext `json:"containerSecurityContext,omitempty"`

	// Metrics: what each pod's /metrics (port 9121, valkey-start) serves besides its volume's
	// usage. Who may scrape it: spec.network.metricsFrom.
	// +optional
	Metrics *MetricsSpec `json:"metrics,omitempty"`
}

// MetricsSpec is what a pod's /metrics serves.
type MetricsSpec struct {
	// Server: the server's own figures, with the names of the Redis/Valkey exporter
	// (redis_up, redis_memory_used_bytes, ...), read at each scrape as the valkey-metrics ACL
	// user. On by default; changing it restarts each pod once (a valkey-start flag).
	// +optional
	Server *bool `json:"server,omitempty"`
}

// ServerMetricsEnabled tells whether the pods serve the server's own figures.
func (m *MetricsSpec) ServerMetricsEnabled() bool {
	return m == nil || m.Server == nil || *m.Server
}
