package workloadcontroller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// shardNode is node c-2-1: shard 2 of cluster c.
func shardNode(s *valkeyv1.SchedulingSpec) *valkeyv1.ValkeyNode {
	n := withName(baseNode())
	n.Name, n.Spec.Shard, n.Spec.ReplicaIndex = "c-2-1", 2, 1
	n.Spec.Scheduling = s
	return n
}

// check is one expectation of a rendered pod spec.
type check struct {
	what string
	ok   bool
}

var shard2 = &metav1.LabelSelector{MatchLabels: map[string]string{valkeyv1.LabelCluster: "c", valkeyv1.LabelShard: "2"}}

func TestPlacementDefault(t *testing.T) {
	spec := podTemplate(shardNode(nil), Options{}).Spec
	anti := spec.Affinity.PodAntiAffinity
	if len(anti.RequiredDuringSchedulingIgnoredDuringExecution) != 0 {
		t.Errorf("default: required anti-affinity %v, want none", anti.RequiredDuringSchedulingIgnoredDuringExecution)
	}
	want := corev1.WeightedPodAffinityTerm{Weight: 100, PodAffinityTerm: corev1.PodAffinityTerm{LabelSelector: shard2, TopologyKey: "kubernetes.io/hostname"}}
	if p := anti.PreferredDuringSchedulingIgnoredDuringExecution; len(p) != 1 || !equality.Semantic.DeepEqual(p[0], want) {
		t.Errorf("default: preferred anti-affinity %+v, want %+v", p, want)
	}
	zone := corev1.TopologySpreadConstraint{MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone", WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: shard2}
	if c := spec.TopologySpreadConstraints; len(c) != 1 || !equality.Semantic.DeepEqual(c[0], zone) {
		t.Errorf("default: spread %+v, want %+v", c, zone)
	}
	if spec.NodeSelector != nil || spec.Tolerations != nil || spec.PriorityClassName != "" || spec.ImagePullSecrets != nil {
		t.Errorf("default: selector %v, tolerations %v, priority %q, pull secrets %v, want none", spec.NodeSelector, spec.Tolerations, spec.PriorityClassName, spec.ImagePullSecrets)
	}
}

func TestPlacementRequired(t *testing.T) {
	spec := podTemplate(shardNode(&valkeyv1.SchedulingSpec{ShardAntiAffinity: valkeyv1.ShardAntiAffinityRequired}), Options{}).Spec
	anti := spec.Affinity.PodAntiAffinity
	want := corev1.PodAffinityTerm{LabelSelector: shard2, TopologyKey: "kubernetes.io/hostname"}
	if r := anti.RequiredDuringSchedulingIgnoredDuringExecution; len(r) != 1 || !equality.Semantic.DeepEqual(r[0], want) {
		t.Errorf("required: %+v, want %+v", r, want)
	}
	if p := anti.PreferredDuringSchedulingIgnoredDuringExecution; len(p) != 0 {
		t.Errorf("required: preferred terms %+v, want none", p)
	}
}

// userScheduling has a term of each kind the shard anti-affinity could clobber.
func userScheduling() *valkeyv1.SchedulingSpec {
	userTerm := corev1.PodAffinityTerm{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "batch"}}, TopologyKey: "kubernetes.io/hostname",
	}
	return &valkeyv1.SchedulingSpec{
		NodeSelector: map[string]string{"pool": "valkey"},
		Tolerations:  []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "valkey", Effect: corev1.TaintEffectNoSchedule}},
		Affinity: &corev1.Affinity{
			NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
					{Key: "arch", Operator: corev1.NodeSelectorOpIn, Values: []string{"arm64"}},
				}}},
			}},
			PodAntiAffinity: &corev1.PodAntiAffinity{
				PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 10, PodAffinityTerm: userTerm}},
			},
		},
		PriorityClassName: "valkey-critical",
		TopologySpreadConstraints: []corev1.TopologySpreadConstraint{
			{MaxSkew: 2, TopologyKey: "rack", WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: shard2},
		},
	}
}

func TestPlacementUserMerged(t *testing.T) {
	n := shardNode(userScheduling())
	n.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry"}}
	spec := podTemplate(n, Options{}).Spec
	checks := []check{
		{"node selector passed", spec.NodeSelector["pool"] == "valkey"},
		{"tolerations passed", len(spec.Tolerations) == 1 && spec.Tolerations[0].Key == "dedicated"},
		{"priority class passed", spec.PriorityClassName == "valkey-critical"},
		{"image pull secrets passed", len(spec.ImagePullSecrets) == 1 && spec.ImagePullSecrets[0].Name == "registry"},
		{"node affinity passed", spec.Affinity.NodeAffinity != nil &&
			spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0].Key == "arch"},
		{"user anti-affinity term kept, shard term added after it", len(spec.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) == 2 &&
			spec.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].Weight == 10 &&
			equality.Semantic.DeepEqual(spec.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[1].PodAffinityTerm.LabelSelector, shard2)},
		{"user spread kept, zone spread added", len(spec.TopologySpreadConstraints) == 2 &&
			spec.TopologySpreadConstraints[0].TopologyKey == "rack" && spec.TopologySpreadConstraints[1].TopologyKey == "topology.kubernetes.io/zone"},
	}
	for _, ch := range checks {
		if !ch.ok {
			t.Errorf("user scheduling: want %s", ch.what)
		}
	}
	if got := len(n.Spec.Scheduling.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution); got != 1 {
		t.Errorf("rendering changed the node's spec: %d anti-affinity terms, want the user's 1", got)
	}
}

func TestPlacementUserZoneReplacesDefault(t *testing.T) {
	zone := corev1.TopologySpreadConstraint{MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone", WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: shard2}
	spec := podTemplate(shardNode(&valkeyv1.SchedulingSpec{TopologySpreadConstraints: []corev1.TopologySpreadConstraint{zone}}), Options{}).Spec
	if c := spec.TopologySpreadConstraints; len(c) != 1 || c[0].WhenUnsatisfiable != corev1.DoNotSchedule {
		t.Errorf("user zone constraint: spread %+v, want only the user's", c)
	}
}

func TestPlacementOutsideCluster(t *testing.T) {
	n := shardNode(&valkeyv1.SchedulingSpec{NodeSelector: map[string]string{"pool": "valkey"}})
	n.Spec.ClusterName = ""
	spec := podTemplate(n, Options{}).Spec
	if spec.Affinity != nil || spec.TopologySpreadConstraints != nil || spec.NodeSelector["pool"] != "valkey" {
		t.Errorf("outside a cluster: affinity %+v, spread %+v, selector %v; want no shard placement, the user's selector", spec.Affinity, spec.TopologySpreadConstraints, spec.NodeSelector)
	}
}

func TestSecurityContextOverride(t *testing.T) {
	n := shardNode(nil)
	n.Spec.PodSecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To(int64(2000)), SupplementalGroups: []int64{5}}
	n.Spec.ContainerSecurityContext = &corev1.SecurityContext{ReadOnlyRootFilesystem: ptr.To(false)}
	spec := podTemplate(n, Options{RunAsUser: 999}).Spec
	pod := spec.SecurityContext
	checks := []check{
		{"runAsUser overridden", *pod.RunAsUser == 2000},
		{"supplementalGroups added", len(pod.SupplementalGroups) == 1 && pod.SupplementalGroups[0] == 5},
		{"runAsGroup and fsGroup kept", *pod.RunAsGroup == 999 && *pod.FSGroup == 999},
		{"runAsNonRoot and seccomp kept", *pod.RunAsNonRoot && pod.SeccompProfile.Type == corev1.SeccompProfileTypeRuntimeDefault},
	}
	for _, c := range []corev1.Container{spec.Containers[0], spec.InitContainers[0]} {
		sc := c.SecurityContext
		checks = append(checks,
			check{c.Name + " readOnlyRootFilesystem overridden", !*sc.ReadOnlyRootFilesystem},
			check{c.Name + " keeps the rest", *sc.RunAsNonRoot && !*sc.AllowPrivilegeEscalation && sc.Capabilities.Drop[0] == "ALL"})
	}
	for _, ch := range checks {
		if !ch.ok {
			t.Errorf("security context: want %s", ch.what)
		}
	}
}
