package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ValkeyClusterSpec is the desired state of a Valkey cluster: shards × (1 + replicas)
// ValkeyNodes named <cluster>-<shard>-<replica>.
//
// +kubebuilder:validation:XValidation:rule="!has(self.persistence) || !has(self.workloadType) || self.workloadType == 'StatefulSet'",message="persistence requires workloadType StatefulSet"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.persistence) || has(self.persistence)",message="persistence cannot be removed once set"
// +kubebuilder:validation:XValidation:rule="has(self.tls) == has(oldSelf.tls)",message="tls cannot be added or removed on an existing cluster: servers with and without TLS cannot talk"
// +kubebuilder:validation:XValidation:rule="has(self.restoreFrom) == has(oldSelf.restoreFrom) && (!has(self.restoreFrom) || self.restoreFrom == oldSelf.restoreFrom)",message="restoreFrom is set only when the cluster is created: restore into a new cluster instead"
// +kubebuilder:validation:XValidation:rule="!has(self.restoreFrom) || has(self.persistence)",message="restoreFrom requires persistence: the backup's snapshots become the nodes' claims"
type ValkeyClusterSpec struct {
	// Shards is the number of primaries the 16384 hash slots are split across.
	// +optional
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	Shards int32 `json:"shards,omitempty"`

	// Replicas per shard. Always serialised (no omitempty) so that a typed client can ask
	// for 0; the default 1 applies when the field is absent from the request.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10
	Replicas int32 `json:"replicas"`

	// ServerSpec is how every node's server runs; each ValkeyNode gets a copy.
	ServerSpec `json:",inline"`

	// Users are Valkey ACL users, applied live on every node. When set, the default user is
	// off unless listed by the name "default". The operator itself uses its own user,
	// valkey-operator, whose password is in the Secret <cluster>-operator.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	Users []UserSpec `json:"users,omitempty"`

	// Network is who may reach the servers: the NetworkPolicy the operator writes.
	// +optional
	Network *NetworkSpec `json:"network,omitempty"`

	// RestoreFrom is a Completed ValkeyBackup, in the cluster's namespace, the new cluster
	// starts from: each shard's snapshot becomes the claim of one node of that shard, and the
	// others replicate it. Set only at creation; shards must equal the backup's. Restored
	// under the backup's cluster name, the restored nodes keep their node IDs; under another
	// name they get new ones and never meet the backed-up cluster's members.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	RestoreFrom string `json:"restoreFrom,omitempty"`
}

// ValkeyClusterStatus is written by the topology controller only.
type ValkeyClusterStatus struct {
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready, Progressing, Degraded, SlotsAssigned.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Shards is the number of shards with a joined primary that owns slots.
	// +optional
	Shards int32 `json:"shards,omitempty"`
	// ReadyShards is the number of shards whose primary and every replica are joined and ready.
	// +optional
	ReadyShards int32 `json:"readyShards,omitempty"`
	// Nodes is the number of ValkeyNodes of the cluster.
	// +optional
	Nodes int32 `json:"nodes,omitempty"`
	// ReadyNodes is the number of nodes that are joined and ready.
	// +optional
	ReadyNodes int32 `json:"readyNodes,omitempty"`
	// SlotsAssigned is the number of hash slots owned by some primary (16384 when complete).
	// +optional
	SlotsAssigned int32 `json:"slotsAssigned,omitempty"`
	// LargestVolume is the largest capacity of the nodes' claims (status.volume.capacity):
	// more than spec.persistence.size once persistence.autoGrow has grown one.
	// +optional
	LargestVolume string `json:"largestVolume,omitempty"`
	// GrownVolumes is the number of nodes whose claim persistence.autoGrow grew past
	// spec.persistence.size.
	// +optional
	GrownVolumes int32 `json:"grownVolumes,omitempty"`
	// ServerVersions sums up the versions the reachable servers run: "9.1.2", or
	// "8.1.8 ×2, 9.1.2 ×4" while they differ (during an upgrade).
	// +optional
	ServerVersions string `json:"serverVersions,omitempty"`
}

// ValkeyCluster is a sharded Valkey cluster.
//
// Its name must leave room for its longest node name, <name>-<shards-1>-<replicas>, in the
// StatefulSet name valkey-<node> (MaxWorkloadNameLength; see MaxClusterNameLength). The rule
// is evaluated on updates too, so a scale-out that adds a digit (10 to 11 shards, 9 to 10
// replicas) is refused the same way.
//
// +kubebuilder:validation:XValidation:rule="!has(self.spec) || self.metadata.name.size() <= 43 - (self.spec.shards > 100 ? 3 : self.spec.shards > 10 ? 2 : 1) - (self.spec.replicas >= 10 ? 2 : 1)",messageExpression=`'metadata.name must be at most ' + ((43 - (self.spec.shards > 100 ? 3 : self.spec.shards > 10 ? 2 : 1) - (self.spec.replicas >= 10 ? 2 : 1)) >= 10 ? ['0', '1', '2', '3', '4', '5', '6', '7', '8', '9'][(43 - (self.spec.shards > 100 ? 3 : self.spec.shards > 10 ? 2 : 1) - (self.spec.replicas >= 10 ? 2 : 1)) / 10 % 10] : "") + ['0', '1', '2', '3', '4', '5', '6', '7', '8', '9'][(43 - (self.spec.shards > 100 ? 3 : self.spec.shards > 10 ? 2 : 1) - (self.spec.replicas >= 10 ? 2 : 1)) % 10] + ' characters for ' + (self.spec.shards >= 1000 ? ['0', '1', '2', '3', '4', '5', '6', '7', '8', '9'][self.spec.shards / 1000 % 10] : "") + (self.spec.shards >= 100 ? ['0', '1', '2', '3', '4', '5', '6', '7', '8', '9'][self.spec.shards / 100 % 10] : "") + (self.spec.shards >= 10 ? ['0', '1', '2', '3', '4', '5', '6', '7', '8', '9'][self.spec.shards / 10 % 10] : "") + ['0', '1', '2', '3', '4', '5', '6', '7', '8', '9'][self.spec.shards % 10] + (self.spec.shards == 1 ? ' shard' : ' shards') + ' and ' + (self.spec.replicas >= 10 ? ['0', '1', '2', '3', '4', '5', '6', '7', '8', '9'][self.spec.replicas / 10 % 10] : "") + ['0', '1', '2', '3', '4', '5', '6', '7', '8', '9'][self.spec.replicas % 10] + (self.spec.replicas == 1 ? ' replica' : ' replicas') + ' (the StatefulSet name valkey-<name>-<shard>-<replica> must fit 52 characters)'`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must start with a letter and hold only lower-case letters, digits and '-': it names the cluster's Services (valkey-<name>)"
// +kubebuilder:validation:XValidation:rule="!self.metadata.name.endsWith('-nodes')",message="metadata.name may not end in -nodes: its client Service valkey-<name> would be the headless Service of the cluster named without -nodes"
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=vkc,categories=valkey
// +kubebuilder:printcolumn:name="Shards",type=integer,JSONPath=`.spec.shards`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Ready Shards",type=integer,JSONPath=`.status.readyShards`
// +kubebuilder:printcolumn:name="Slots",type=integer,JSONPath=`.status.slotsAssigned`
// +kubebuilder:printcolumn:name="Size",type=string,JSONPath=`.spec.persistence.size`
// +kubebuilder:printcolumn:name="Largest",type=string,JSONPath=`.status.largestVolume`,priority=1
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.serverVersions`,priority=1
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ValkeyCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state of the Valkey cluster.
	Spec ValkeyClusterSpec `json:"spec,omitempty"`
	// Status is what the controllers observed of the Valkey cluster; only they write it.
	Status ValkeyClusterStatus `json:"status,omitempty"`
}

// ValkeyClusterList is a list of ValkeyClusters.
//
// +kubebuilder:object:root=true
type ValkeyClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the ValkeyClusters.
	Items []ValkeyCluster `json:"items"`
}

// GetConditions returns the cluster's status conditions.
func (c *ValkeyCluster) GetConditions() []metav1.Condition { return c.Status.Conditions }
