package workloadcontroller_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

func announceHostname(n *valkeyv1.ValkeyNode) {
	inCluster(n)
	n.Spec.Announce = valkeyv1.AnnounceHostname
}

var _ = Describe("Pod DNS names", func() {
	It("names a new node's pod under the headless Service and announces that name", func(ctx context.Context) {
		ns := newNamespace(ctx)
		n := createNode(ctx, ns, announceHostname)
		sts := waitStatefulSet(ctx, n)
		Expect(sts.Spec.ServiceName).To(Equal("valkey-c-nodes"))
		Expect(sts.Spec.Template.Spec.Hostname).To(Equal("valkey-c-0-0-0"))
		Expect(sts.Spec.Template.Spec.Subdomain).To(Equal("valkey-c-nodes"))
		name := "valkey-c-0-0-0.valkey-c-nodes." + ns + ".svc.cluster.local"
		Eventually(configMap(ctx, n)).Should(And(
			ContainSubstring("\ncluster-announce-hostname \""+name+"\"\n"),
			ContainSubstring("\ncluster-preferred-endpoint-type \"hostname\"\n")))
	})

	It("keeps a StatefulSet made without serviceName (immutable) working, and then announces no name that would not resolve", func(ctx context.Context) {
		ns := newNamespace(ctx)
		By("a node whose StatefulSet an earlier version made (no serviceName), before its volume is reported")
		n := createNode(ctx, ns, func(n *valkeyv1.ValkeyNode) { announceHostname(n); withPersistence(n) })
		n = getNode(ctx, n)
		labels := map[string]string{valkeyv1.LabelNode: "c-0-0", valkeyv1.LabelManagedBy: valkeyv1.ManagedByValue, valkeyv1.LabelName: valkeyv1.NameValue}
		old := &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "valkey-c-0-0", Labels: valkeyv1.NodeLabels(n), OwnerReferences: []metav1.OwnerReference{
				*metav1.NewControllerRef(n, valkeyv1.GroupVersion.WithKind("ValkeyNode")),
			}},
			Spec: appsv1.StatefulSetSpec{
				Selector:            &metav1.LabelSelector{MatchLabels: labels},
				PodManagementPolicy: appsv1.ParallelPodManagement,
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "valkey", Image: "valkey/valkey:7.2"}}},
				},
			},
		}
		Expect(k8s.Create(ctx, old)).To(Succeed())
		playVolume(ctx, n, true, valkeyv1.ReasonBound)
		runningReady(ctx, n, "10.0.3.1")
		Eventually(condition(ctx, n, valkeyv1.ConditionRollPending)).Should(Equal("True/TemplateChanged"))
		playTopology(ctx, n, 0, approved())
		Eventually(image(ctx, n)).Should(Equal("valkey/valkey:8.0"), "the roll is applied to the old StatefulSet")
		Expect(statefulSet(ctx, n)().Spec.ServiceName).To(BeEmpty())
		Expect(configMap(ctx, n)()).NotTo(ContainSubstring("cluster-announce-hostname"))
	})
})
