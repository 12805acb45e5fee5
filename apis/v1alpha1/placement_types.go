package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// ShardAntiAffinity is how strictly the nodes of one shard are kept on different
// Kubernetes nodes.
// +kubebuilder:validation:Enum=Preferred;Required
type ShardAntiAffinity string

const (
	// ShardAntiAffinityPreferred asks the scheduler to put a shard's nodes on different
	// Kubernetes nodes (pod anti-affinity, weight 100), and lets them share one when no
	// other fits.
	ShardAntiAffinityPreferred ShardAntiAffinity = "Preferred"
	// ShardAntiAffinityRequired never puts two nodes of a shard on one Kubernetes node: a
	// pod that has no node of its own stays Pending.
	ShardAntiAffinityRequired ShardAntiAffinity = "Required"
)

// SchedulingSpec places the servers' pods. Every field but shardAntiAffinity is passed
// as it is to every pod.
type SchedulingSpec struct {
	// ShardAntiAffinity keeps the nodes of one shard (its primary and replicas) on
	// different Kubernetes nodes: Preferred (default) or Required. It is a pod anti-affinity
	// term on kubernetes.io/hostname against the pods with the same valkey.io/cluster and
	// valkey.io/shard labels, added to the terms of affinity.
	// +optional
	// +kubebuilder:default=Preferred
	ShardAntiAffinity ShardAntiAffinity `json:"shardAntiAffinity,omitempty"`

	// NodeSelector the pods' Kubernetes nodes must match.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// Affinity of the pods. Its terms are merged with the operator's shard anti-affinity
	// term: they never replace it.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// Tolerations of the pods.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:XValidation:rule="!has(self.operator) || self.operator in ['Exists', 'Equal']",message="tolerations[].operator must be Exists or Equal"
	// +kubebuilder:validation:items:XValidation:rule="!has(self.effect) || self.effect in ['', 'NoSchedule', 'PreferNoSchedule', 'NoExecute']",message="tolerations[].effect must be NoSchedule, PreferNoSchedule or NoExecute (or empty for all)"
	// +kubebuilder:validation:items:XValidation:rule="!has(self.operator) || self.operator != 'Exists' || !has(self.value) || self.value == ''",message="tolerations[].value must be empty when the operator is Exists"
	// +kubebuilder:validation:items:XValidation:rule="has(self.key) && self.key != '' || has(self.operator) && self.operator == 'Exists'",message="tolerations[].key may be empty only with the operator Exists"
	// +kubebuilder:validation:items:XValidation:rule="!has(self.tolerationSeconds) || has(self.effect) && self.effect == 'NoExecute'",message="tolerations[].tolerationSeconds is allowed only with the effect NoExecute"
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// PriorityClassName of the pods.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// TopologySpreadConstraints of the pods. By default a shard's pods are spread over
	// topology.kubernetes.io/zone (maxSkew 1, ScheduleAnyway); a constraint given here on
	// that key replaces the default one, constraints on other keys are added to it.
	// +optional
	// +listType=atomic
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`
}

// EffectiveShardAntiAffinity returns the shard anti-affinity, Preferred when unset.
func (s *SchedulingSpec) EffectiveShardAntiAffinity() ShardAntiAffinity {
	if s == nil || s.ShardAntiAffinity == "" {
		return ShardAntiAffinityPreferred
	}
	return s.ShardAntiAffinity
}

// NetworkPolicyMode says whether the operator writes the cluster's NetworkPolicy.
// +kubebuilder:validation:Enum=Enabled;Disabled
type NetworkPolicyMode string

const (
	// NetworkPolicyEnabled makes the topology controller write the cluster's NetworkPolicy.
	NetworkPolicyEnabled NetworkPolicyMode = "Enabled"
	// NetworkPolicyDisabled writes no NetworkPolicy (and deletes the one written before),
	// for users who write their own.
	NetworkPolicyDisabled NetworkPolicyMode = "Disabled"
)

// NetworkSpec is who may reach the cluster's servers.
type NetworkSpec struct {
	// Policy: Enabled (default) makes the topology controller write the NetworkPolicy
	// valkey-<cluster>: the cluster bus port (16379) only from the cluster's own pods, the
	// client port (6379) from those, the topology controller's pods and clientFrom, the
	// metrics port (9121) from the volume controller's pods and metricsFrom.
	// Disabled writes none (and deletes the one written before), for your own policies.
	// +optional
	// +kubebuilder:default=Enabled
	Policy NetworkPolicyMode `json:"policy,omitempty"`

	// ClientFrom are the peers allowed to reach the client port besides the cluster's own
	// pods and the topology controller's. Empty (the default): any peer.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=50
	ClientFrom []networkingv1.NetworkPolicyPeer `json:"clientFrom,omitempty"`

	// MetricsFrom are the peers allowed to reach each pod's metrics port (9121:
	// valkey-start's /metrics, with the server's own figures) besides the volume controller,
	// for example your Prometheus: a namespaceSelector of its namespace and a podSelector of
	// its pods. Empty (the default): the volume controller only.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=50
	MetricsFrom []networkingv1.NetworkPolicyPeer `json:"metricsFrom,omitempty"`
}

// PolicyEnabled tells whether the cluster's NetworkPolicy is written.
func (n *NetworkSpec) PolicyEnabled() bool {
	return n == nil || n.Policy != NetworkPolicyDisabled
}
