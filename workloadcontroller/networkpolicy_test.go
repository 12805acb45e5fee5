package workloadcontroller_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// nodePolicy returns the NetworkPolicy valkey-<node>, nil when there is none.
func nodePolicy(ctx context.Context, n *valkeyv1.ValkeyNode) func() *networkingv1.NetworkPolicy {
	return func() *networkingv1.NetworkPolicy {
		var np networkingv1.NetworkPolicy
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: n.Namespace, Name: valkeyv1.WorkloadName(n.Name)}, &np); err != nil {
			return nil
		}
		return &np
	}
}

// clientPort is the NetworkPolicy port of the client port.
var clientPort = networkingv1.NetworkPolicyPort{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt(6379))}

// A node outside any cluster has no cluster policy to cover it: the workload controller
// writes one of its own, which admits its client port only.
var _ = Describe("NetworkPolicy of a node outside any cluster", func() {
	It("admits the client port only, from clientFrom when set, the metrics port from metricsFrom, deletes it when Disabled, and writes none for a cluster's node", func(ctx context.Context) {
		ns := newNamespace(ctx)
		n := createNode(ctx, ns, func(n *valkeyv1.ValkeyNode) { n.Name = "alone" })
		Eventually(nodePolicy(ctx, n)).ShouldNot(BeNil())
		np := nodePolicy(ctx, n)()
		Expect(metav1.IsControlledBy(np, getNode(ctx, n))).To(BeTrue())
		Expect(np.Spec.PodSelector.MatchLabels).To(HaveKeyWithValue(valkeyv1.LabelNode, "alone"))
		Expect(np.Spec.PolicyTypes).To(Equal([]networkingv1.PolicyType{networkingv1.PolicyTypeIngress}))
		Expect(np.Spec.Ingress).To(Equal([]networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{clientPort}}}),
			"the client port from anyone, no other port (no bus)")

		By("with clientFrom, only those peers")
		apps := networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}
		updateNode(ctx, n, func(n *valkeyv1.ValkeyNode) {
			n.Spec.Network = &valkeyv1.NetworkSpec{ClientFrom: []networkingv1.NetworkPolicyPeer{apps}}
		})
		Eventually(func() []networkingv1.NetworkPolicyIngressRule { return nodePolicy(ctx, n)().Spec.Ingress }).Should(Equal(
			[]networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{clientPort}, From: []networkingv1.NetworkPolicyPeer{apps}}}))

		By("with metricsFrom, those peers on the metrics port too")
		prom := networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "monitoring"}}}
		updateNode(ctx, n, func(n *valkeyv1.ValkeyNode) { n.Spec.Network.MetricsFrom = []networkingv1.NetworkPolicyPeer{prom} })
		metricsPort := networkingv1.NetworkPolicyPort{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(9121))}
		Eventually(func() []networkingv1.NetworkPolicyIngressRule { return nodePolicy(ctx, n)().Spec.Ingress }).Should(Equal(
			[]networkingv1.NetworkPolicyIngressRule{
				{Ports: []networkingv1.NetworkPolicyPort{clientPort}, From: []networkingv1.NetworkPolicyPeer{apps}},
				{Ports: []networkingv1.NetworkPolicyPort{metricsPort}, From: []networkingv1.NetworkPolicyPeer{prom}},
			}))

		By("Disabled: deleted")
		updateNode(ctx, n, func(n *valkeyv1.ValkeyNode) { n.Spec.Network.Policy = valkeyv1.NetworkPolicyDisabled })
		Eventually(nodePolicy(ctx, n)).Should(BeNil())

		By("a cluster's node gets none from this controller")
		c := createNode(ctx, ns, func(n *valkeyv1.ValkeyNode) { n.Spec.ClusterName = "c" })
		waitStatefulSet(ctx, c)
		Expect(nodePolicy(ctx, c)()).To(BeNil())
	})

	It("leaves a NetworkPolicy of the node's name made by someone else alone, reports it, and runs the node all the same", func(ctx context.Context) {
		ns := newNamespace(ctx)
		theirs := &networkingv1.NetworkPolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: valkeyv1.WorkloadName("c-0-0")},
			Spec:       networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "theirs"}}},
		}
		Expect(k8s.Create(ctx, theirs)).To(Succeed())
		n := createNode(ctx, ns, nil)
		waitStatefulSet(ctx, n)
		Eventually(func() string { return message(ctx, n, valkeyv1.ConditionWorkloadReady) }).Should(
			ContainSubstring("NetworkPolicy " + theirs.Name + " exists and is not owned by ValkeyNode c-0-0"))
		Eventually(eventReasons(ctx, n)).Should(ContainElement(HavePrefix("Warning/" + valkeyv1.EventNetworkPolicyRefused)))
		cur := nodePolicy(ctx, n)()
		Expect(cur.OwnerReferences).To(BeEmpty())
		Expect(cur.Spec.PodSelector.MatchLabels).To(Equal(map[string]string{"app": "theirs"}))
	})
})
