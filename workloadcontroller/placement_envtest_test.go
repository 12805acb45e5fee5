package workloadcontroller_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// shardPods selects the pods of shard 0 of cluster c.
var shardPods = &metav1.LabelSelector{MatchLabels: map[string]string{valkeyv1.LabelCluster: "c", valkeyv1.LabelShard: "0"}}

// antiAffinity returns the pod anti-affinity of the StatefulSet's template.
func antiAffinity(sts *appsv1.StatefulSet) *corev1.PodAntiAffinity {
	if a := sts.Spec.Template.Spec.Affinity; a != nil {
		return a.PodAntiAffinity
	}
	return nil
}

var _ = Describe("Placement", func() {
	It("keeps a shard apart by default, requires it on request and passes the user's scheduling through, by an approved roll", func(ctx context.Context) {
		ns := newNamespace(ctx)
		n := createNode(ctx, ns, inCluster)
		sts := waitStatefulSet(ctx, n)
		hostTerm := corev1.PodAffinityTerm{LabelSelector: shardPods, TopologyKey: "kubernetes.io/hostname"}
		Expect(antiAffinity(sts)).To(Equal(&corev1.PodAntiAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 100, PodAffinityTerm: hostTerm}},
		}))
		Expect(sts.Spec.Template.Spec.TopologySpreadConstraints).To(ConsistOf(corev1.TopologySpreadConstraint{
			MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone", WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: shardPods,
		}))
		runningReady(ctx, n, "10.0.7.1")

		By("required anti-affinity and the user's scheduling wait for the roll's approval")
		updateNode(ctx, n, func(n *valkeyv1.ValkeyNode) {
			n.Spec.Scheduling = &valkeyv1.SchedulingSpec{
				ShardAntiAffinity: valkeyv1.ShardAntiAffinityRequired,
				NodeSelector:      map[string]string{"pool": "valkey"},
				Tolerations:       []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "valkey", Effect: corev1.TaintEffectNoSchedule}},
				PriorityClassName: "valkey-critical",
			}
			n.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry"}}
			n.Spec.PodSecurityContext = &corev1.PodSecurityContext{SupplementalGroups: []int64{4000}}
		})
		Eventually(condition(ctx, n, valkeyv1.ConditionRollPending)).Should(Equal("True/TemplateChanged"))
		Consistently(func() *corev1.PodAntiAffinity { return antiAffinity(statefulSet(ctx, n)()) }).
			Should(HaveField("RequiredDuringSchedulingIgnoredDuringExecution", BeEmpty()))

		playTopology(ctx, n, 0, approved())
		Eventually(func() *corev1.PodAntiAffinity { return antiAffinity(statefulSet(ctx, n)()) }).Should(Equal(&corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{hostTerm},
		}))
		spec := statefulSet(ctx, n)().Spec.Template.Spec
		Expect(spec.NodeSelector).To(Equal(map[string]string{"pool": "valkey"}))
		Expect(spec.Tolerations).To(ConsistOf(HaveField("Key", "dedicated")))
		Expect(spec.PriorityClassName).To(Equal("valkey-critical"))
		Expect(spec.ImagePullSecrets).To(Equal([]corev1.LocalObjectReference{{Name: "registry"}}))
		Expect(spec.SecurityContext.SupplementalGroups).To(Equal([]int64{4000}))
		Expect(spec.SecurityContext.RunAsNonRoot).To(Equal(ptr.To(true)), "fields the override leaves out keep the default")
	})
})
