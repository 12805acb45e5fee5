package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ValkeyNodeSpec is the desired state of one Valkey server: what the volume and workload
// controllers need to run it, and the fields that link it to its cluster, shard and
// replica index. The topology controller writes it for nodes it fans out of a ValkeyCluster.
//
// +kubebuilder:validation:XValidation:rule="!has(self.persistence) || !has(self.workloadType) || self.workloadType == 'StatefulSet'",message="persistence requires workloadType StatefulSet"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.persistence) || has(self.persistence)",message="persistence cannot be removed once set"
// +kubebuilder:validation:XValidation:rule="!has(self.network) || !has(self.clusterName) || size(self.clusterName) == 0",message="network is for a node outside any cluster: a cluster's nodes are covered by the ValkeyCluster's spec.network"
type ValkeyNodeSpec struct {
	// ClusterName is the ValkeyCluster this node belongs to; empty for a node outside any
	// cluster (it then runs alone and rolls without approval).
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="clusterName is immutable"
	ClusterName string `json:"clusterName,omitempty"`

	// Shard index of the node within its cluster.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:default=0
	Shard int32 `json:"shard"`

	// ReplicaIndex within its shard; 0 is the node that starts as the shard's primary.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:default=0
	ReplicaIndex int32 `json:"replicaIndex"`

	// ServerSpec is how the node's server runs (copied from its ValkeyCluster).
	ServerSpec `json:",inline"`

	// Network is who may reach a node outside any cluster: the NetworkPolicy valkey-<node>
	// the workload controller writes admits its client port (and tls.plaintextPort) from
	// clientFrom, or from anyone when clientFrom is empty, and no other port. Set only
	// without clusterName; absent means policy Enabled with no clientFrom.
	// +optional
	Network *NetworkSpec `json:"network,omitempty"`

	// Restore is set on the one node per shard of a restored cluster that starts from the
	// backup's snapshot of that shard.
	// +optional
	Restore *NodeRestore `json:"restore,omitempty"`
}

// ValkeyNodeStatus is written by three controllers, each by server-side apply with its own
// field manager and only for the conditions and sub-struct it owns (see docs/contract.md).
type ValkeyNodeStatus struct {
	// Conditions: VolumeReady and VolumeSized (volume controller); WorkloadReady and
	// RollPending (workload controller); ClusterJoined, RollApproved and Drained (topology
	// controller).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Volume is written by the volume controller.
	// +optional
	Volume *VolumeStatus `json:"volume,omitempty"`

	// Workload is written by the workload controller.
	// +optional
	Workload *WorkloadStatus `json:"workload,omitempty"`

	// Topology is written by the topology controller.
	// +optional
	Topology *TopologyStatus `json:"topology,omitempty"`
}

// VolumeStatus is the volume controller's view of the node's claim.
type VolumeStatus struct {
	// ClaimName of the node's PersistentVolumeClaim.
	// +optional
	ClaimName string `json:"claimName,omitempty"`
	// StorageClassName the claim uses (resolved default included).
	// +optional
	StorageClassName string `json:"storageClassName,omitempty"`
	// Requested size on the claim.
	// +optional
	Requested string `json:"requested,omitempty"`
	// Capacity the claim reports.
	// +optional
	Capacity string `json:"capacity,omitempty"`
	// Phase of the claim (Pending, Bound, Lost).
	// +optional
	Phase string `json:"phase,omitempty"`
	// RestoredFrom is the VolumeSnapshot the claim was created from (its dataSource), on a
	// node restored from a backup (spec.restore) whose claim was made for it: the volume
	// controller's word that the node's data starts from the backup. Empty for any other
	// claim.
	// +optional
	RestoredFrom string `json:"restoredFrom,omitempty"`
	// Snapshot is the node's VolumeSnapshot for the backup of status.topology.savedPoint,
	// while that is set.
	// +optional
	Snapshot *SnapshotStatus `json:"snapshot,omitempty"`
	// AutoGrownTo is the size persistence.autoGrow last grew the claim to, while the claim
	// requests more than persistence.size because of it.
	// +optional
	AutoGrownTo string `json:"autoGrownTo,omitempty"`
	// Usage of /data as measured in the pod. Written again only when the figure changes
	// meaningfully (see docs/contract.md, "Volume usage"): measuredAt is when this figure
	// was taken, and the metrics carry the latest one.
	// +optional
	Usage *VolumeUsage `json:"usage,omitempty"`
}

// VolumeUsage is the file system of a node's /data as its pod sees it.
type VolumeUsage struct {
	// UsedBytes in use on the file system.
	UsedBytes int64 `json:"usedBytes"`
	// CapacityBytes of the file system (what the claim's capacity gives after the file
	// system's own overhead).
	CapacityBytes int64 `json:"capacityBytes"`
	// Percent of the capacity in use, rounded down.
	Percent int32 `json:"percent"`
	// Persistence is the server's own report: ok, or what fails (rdb: the last BGSAVE
	// failed; aof: the last AOF write failed); the server refuses writes with MISCONF
	// while it fails.
	// +optional
	Persistence string `json:"persistence,omitempty"`
	// MeasuredAt is when this figure was taken.
	MeasuredAt metav1.Time `json:"measuredAt"`
}

// WorkloadStatus is the workload controller's view of the node's pod.
type WorkloadStatus struct {
	// Kind of workload (StatefulSet or Deployment) and its name.
	// +optional
	Kind string `json:"kind,omitempty"`
	// +optional
	Name string `json:"name,omitempty"`
	// PodName of the running pod.
	// +optional
	PodName string `json:"podName,omitempty"`
	// PodIP of the running pod; the address the topology controller talks to.
	// +optional
	PodIP string `json:"podIP,omitempty"`
	// TemplateHash of the pod template the workload runs.
	// +optional
	TemplateHash string `json:"templateHash,omitempty"`
	// DesiredTemplateHash of the template the node's spec asks for (differs while a roll waits).
	// +optional
	DesiredTemplateHash string `json:"desiredTemplateHash,omitempty"`
}

// Role of a node in its Valkey cluster.
type Role string

const (
	// RolePrimary is a Valkey primary, owner of status.topology.slots hash slots.
	RolePrimary Role = "primary"
	// RoleReplica is a Valkey replica of the primary status.topology.primaryID names.
	RoleReplica Role = "replica"
)

// TopologyStatus is the topology controller's view of the node in its Valkey cluster.
type TopologyStatus struct {
	// NodeID is the Valkey cluster node ID.
	// +optional
	NodeID string `json:"nodeID,omitempty"`
	// Role is primary or replica.
	// +optional
	Role Role `json:"role,omitempty"`
	// PrimaryID is the node ID of the primary this replica follows.
	// +optional
	PrimaryID string `json:"primaryID,omitempty"`
	// Slots is the number of hash slots the node owns.
	// +optional
	Slots int32 `json:"slots,omitempty"`
	// Address the node was last reached at (ip:port).
	// +optional
	Address string `json:"address,omitempty"`
	// ServerVersion is the version the node's server reports (valkey_version; "redis
	// <version>" for a Redis server).
	// +optional
	ServerVersion string `json:"serverVersion,omitempty"`
	// SavedPoint is set while a backup waits for this node's claim to be snapshotted: the
	// node's BGSAVE has finished.
	// +optional
	SavedPoint *SavedPoint `json:"savedPoint,omitempty"`
}

// ValkeyNode is one Valkey server with its volume and workload.
//
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 45",message="metadata.name must be at most 45 characters (the StatefulSet name valkey-<name> must fit 52 characters)"
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=vkn,categories=valkey
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterName`
// +kubebuilder:printcolumn:name="Shard",type=integer,JSONPath=`.spec.shard`
// +kubebuilder:printcolumn:name="Role",type=string,JSONPath=`.status.topology.role`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.topology.serverVersion`,priority=1
// +kubebuilder:printcolumn:name="Volume",type=string,JSONPath=`.status.conditions[?(@.type=="VolumeReady")].reason`
// +kubebuilder:printcolumn:name="Size",type=string,JSONPath=`.status.volume.capacity`
// +kubebuilder:printcolumn:name="Used",type=integer,JSONPath=`.status.volume.usage.percent`
// +kubebuilder:printcolumn:name="Workload",type=string,JSONPath=`.status.conditions[?(@.type=="WorkloadReady")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ValkeyNode struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state of the Valkey node.
	Spec ValkeyNodeSpec `json:"spec,omitempty"`
	// Status is what the controllers observed of the Valkey node; only they write it.
	Status ValkeyNodeStatus `json:"status,omitempty"`
}

// ValkeyNodeList is a list of ValkeyNodes.
//
// +kubebuilder:object:root=true
type ValkeyNodeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the ValkeyNodes.
	Items []ValkeyNode `json:"items"`
}

// GetConditions returns the node's status conditions (for predicates shared by the
// controllers).
func (n *ValkeyNode) GetConditions() []metav1.Condition { return n.Status.Conditions }
