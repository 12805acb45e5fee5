package workloadcontroller

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// shardAntiAffinityWeight is the weight of the preferred shard anti-affinity term: the
// highest, so that it outweighs any other preference but the user's own of weight 100.
const shardAntiAffinityWeight = 100

// place sets where the node's pod may run: the user's node selector, tolerations, priority
// class and image pull secrets as they are; the user's affinity with the shard anti-affinity
// term added; the user's topology spread constraints with the default zone spread added.
// A node outside any cluster has no shard, and gets only what the user set.
func place(node *valkeyv1.ValkeyNode, spec *corev1.PodSpec) {
	s := node.Spec.Scheduling.DeepCopy()
	if s == nil {
		s = &valkeyv1.SchedulingSpec{}
	}
	spec.NodeSelector = s.NodeSelector
	spec.Tolerations = s.Tolerations
	spec.PriorityClassName = s.PriorityClassName
	spec.Affinity = s.Affinity
	spec.TopologySpreadConstraints = s.TopologySpreadConstraints
	for _, ref := range node.Spec.ImagePullSecrets {
		spec.ImagePullSecrets = append(spec.ImagePullSecrets, *ref.DeepCopy())
	}
	if node.Spec.ClusterName == "" {
		return
	}
	shard := shardSelector(node)
	spec.Affinity = withShardAntiAffinity(spec.Affinity, shard, s.EffectiveShardAntiAffinity())
	spec.TopologySpreadConstraints = withZoneSpread(spec.TopologySpreadConstraints, shard)
}

// shardSelector selects the pods of the node's shard: its primary and replicas.
func shardSelector(node *valkeyv1.ValkeyNode) *metav1.LabelSelector {
	l := valkeyv1.NodeLabels(node)
	return &metav1.LabelSelector{MatchLabels: map[string]string{
		valkeyv1.LabelCluster: l[valkeyv1.LabelCluster],
		valkeyv1.LabelShard:   l[valkeyv1.LabelShard],
	}}
}

// withShardAntiAffinity adds to a (the user's affinity, or nil) the pod anti-affinity term
// that keeps the shard's pods on different Kubernetes nodes: preferred with weight 100, or
// required. The user's terms stay.
func withShardAntiAffinity(a *corev1.Affinity, shard *metav1.LabelSelector, mode valkeyv1.ShardAntiAffinity) *corev1.Affinity {
	if a == nil {
		a = &corev1.Affinity{}
	}
	if a.PodAntiAffinity == nil {
		a.PodAntiAffinity = &corev1.PodAntiAffinity{}
	}
	term := corev1.PodAffinityTerm{LabelSelector: shard, TopologyKey: corev1.LabelHostname}
	anti := a.PodAntiAffinity
	if mode == valkeyv1.ShardAntiAffinityRequired {
		anti.RequiredDuringSchedulingIgnoredDuringExecution = append(anti.RequiredDuringSchedulingIgnoredDuringExecution, term)
		return a
	}
	anti.PreferredDuringSchedulingIgnoredDuringExecution = append(anti.PreferredDuringSchedulingIgnoredDuringExecution,
		corev1.WeightedPodAffinityTerm{Weight: shardAntiAffinityWeight, PodAffinityTerm: term})
	return a
}

// withZoneSpread adds to the user's constraints the default one that spreads the shard's
// pods over zones (maxSkew 1, ScheduleAnyway), unless the user constrains zones already:
// two constraints on one key and one whenUnsatisfiable are refused by the API server, and
// the user's is the one meant.
func withZoneSpread(user []corev1.TopologySpreadConstraint, shard *metav1.LabelSelector) []corev1.TopologySpreadConstraint {
	for _, c := range user {
		if c.TopologyKey == corev1.LabelTopologyZone {
			return user
		}
	}
	return append(user, corev1.TopologySpreadConstraint{
		MaxSkew:           1,
		TopologyKey:       corev1.LabelTopologyZone,
		WhenUnsatisfiable: corev1.ScheduleAnyway,
		LabelSelector:     shard,
	})
}
