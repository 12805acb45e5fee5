package topologycontroller_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// budgets returns the PodDisruptionBudgets of ns by name.
func budgets(ns string) func() map[string]policyv1.PodDisruptionBudget {
	return func() map[string]policyv1.PodDisruptionBudget {
		var list policyv1.PodDisruptionBudgetList
		Expect(k8s.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
		out := map[string]policyv1.PodDisruptionBudget{}
		for _, p := range list.Items {
			out[p.Name] = p
		}
		return out
	}
}

// budgetOf matches the budget of one shard of cluster c.
func budgetOf(vc *valkeyv1.ValkeyCluster, shard string) OmegaMatcher {
	return And(
		HaveField("Spec.MaxUnavailable", Equal(ptr.To(intstr.FromInt32(1)))),
		HaveField("Spec.Selector.MatchLabels", Equal(map[string]string{valkeyv1.LabelCluster: vc.Name, valkeyv1.LabelShard: shard})),
		HaveField("Spec.UnhealthyPodEvictionPolicy", Equal(ptr.To(policyv1.AlwaysAllow))),
		WithTransform(func(p policyv1.PodDisruptionBudget) bool { return metav1.IsControlledBy(&p, vc) }, BeTrue()),
	)
}

// policy returns the cluster's NetworkPolicy, nil when there is none.
func policy(ns, cluster string) func() *networkingv1.NetworkPolicy {
	return func() *networkingv1.NetworkPolicy {
		var np networkingv1.NetworkPolicy
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: valkeyv1.NetworkPolicyName(cluster)}, &np); err != nil {
			return nil
		}
		return &np
	}
}

// rule admits from (anyone when nil) to one TCP port.
func rule(port int, from ...networkingv1.NetworkPolicyPeer) networkingv1.NetworkPolicyIngressRule {
	return networkingv1.NetworkPolicyIngressRule{
		Ports: []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt(port))}},
		From:  from,
	}
}

func progressingReason(ns, name string) func() string {
	return func() string {
		if c := status.Get(getCluster(ns, name).Status.Conditions, valkeyv1.ConditionProgressing); c != nil {
			return c.Reason
		}
		return ""
	}
}

var _ = Describe("Disruption budgets and placement", func() {

	It("keeps a budget per shard, copies scheduling to every node, and removes a removed shard's budget once its nodes are gone", func() {
		ns := newNamespace()
		formCluster(ns, "c", 2, 1)
		vc := getCluster(ns, "c")
		Eventually(budgets(ns), 10*time.Second).Should(SatisfyAll(
			HaveLen(2), HaveKeyWithValue("valkey-c-0", budgetOf(vc, "0")), HaveKeyWithValue("valkey-c-1", budgetOf(vc, "1"))))

		By("a budget deleted by hand is written again")
		gone := budgets(ns)()["valkey-c-0"]
		Expect(k8s.Delete(context.Background(), &gone)).To(Succeed())
		Eventually(func() types.UID { return budgets(ns)()["valkey-c-0"].UID }, 10*time.Second).ShouldNot(Or(BeEmpty(), Equal(gone.UID)))

		By("the cluster's scheduling, pull secrets and security context reach every node")
		patchSpec(ns, "c", `{"scheduling":{"shardAntiAffinity":"Required","tolerations":[{"key":"dedicated","operator":"Exists"}]},`+
			`"imagePullSecrets":[{"name":"registry"}],"podSecurityContext":{"supplementalGroups":[4000]}}`)
		Eventually(func(g Gomega) {
			for _, n := range listNodes(ns) {
				g.Expect(n.Spec.Scheduling).NotTo(BeNil(), n.Name)
				g.Expect(n.Spec.Scheduling.EffectiveShardAntiAffinity()).To(Equal(valkeyv1.ShardAntiAffinityRequired), n.Name)
				g.Expect(n.Spec.Scheduling.Tolerations).To(ConsistOf(HaveField("Key", "dedicated")), n.Name)
				g.Expect(n.Spec.ImagePullSecrets).To(Equal([]corev1.LocalObjectReference{{Name: "registry"}}), n.Name)
				g.Expect(n.Spec.PodSecurityContext.SupplementalGroups).To(Equal([]int64{4000}), n.Name)
			}
		}, 20*time.Second).Should(Succeed())

		By("scale-in to one shard: shard 1's budget goes only after its nodes")
		setShards(ns, "c", 1)
		Eventually(budgets(ns), formTimeout).Should(SatisfyAll(HaveLen(1), HaveKey("valkey-c-0")))
		for _, n := range listNodes(ns) {
			Expect(n.Spec.Shard).To(BeZero(), "node %s of the removed shard outlived its budget", n.Name)
		}
		Eventually(clusterReady(ns, "c"), formTimeout).Should(Succeed())
	})
})

var _ = Describe("NetworkPolicy", func() {

	It("admits the bus from the cluster's pods only, the client port from anyone or from clientFrom and the topology controller, the metrics port from the volume controller and metricsFrom, reports a refused policy, and deletes it when Disabled", func() {
		ns := newNamespace()
		vc := newCluster(ns, "n", 1, 0)
		DeferCleanup(func() { Expect(k8s.Delete(context.Background(), vc)).To(Succeed()) })
		own := networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{
			valkeyv1.LabelCluster: "n", valkeyv1.LabelManagedBy: valkeyv1.ManagedByValue,
		}}}
		operator := networkingv1.NetworkPolicyPeer{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": testOptions.OperatorNamespace}},
			PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{
				"app.kubernetes.io/name": "valkey-operator", "app.kubernetes.io/component": "topology-controller",
			}},
		}
		volume := networkingv1.NetworkPolicyPeer{NamespaceSelector: operator.NamespaceSelector, PodSelector: &metav1.LabelSelector{
			MatchLabels: map[string]string{"app.kubernetes.io/name": "valkey-operator", "app.kubernetes.io/component": "volume-controller"},
		}}
		Eventually(policy(ns, "n"), 10*time.Second).ShouldNot(BeNil())
		np := policy(ns, "n")()
		Expect(metav1.IsControlledBy(np, vc)).To(BeTrue())
		Expect(np.Spec.PodSelector).To(Equal(*own.PodSelector))
		Expect(np.Spec.PolicyTypes).To(Equal([]networkingv1.PolicyType{networkingv1.PolicyTypeIngress}))
		Expect(np.Spec.Ingress).To(Equal([]networkingv1.NetworkPolicyIngressRule{rule(16379, own), rule(6379), rule(9121, volume)}))

		By("clientFrom narrows the client port to the cluster, the topology controller's pods and those peers")
		web := networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}
		patchSpec(ns, "n", `{"network":{"clientFrom":[{"podSelector":{"matchLabels":{"app":"web"}}}]}}`)
		Eventually(func() []networkingv1.NetworkPolicyIngressRule { return policy(ns, "n")().Spec.Ingress }, 10*time.Second).
			Should(Equal([]networkingv1.NetworkPolicyIngressRule{rule(16379, own), rule(6379, own, operator, web), rule(9121, volume)}))

		By("metricsFrom admits a Prometheus to the metrics port, besides the volume controller")
		prom := networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "monitoring"}}}
		patchSpec(ns, "n", `{"network":{"metricsFrom":[{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"monitoring"}}}]}}`)
		Eventually(func() []networkingv1.NetworkPolicyIngressRule { return policy(ns, "n")().Spec.Ingress }, 10*time.Second).
			Should(Equal([]networkingv1.NetworkPolicyIngressRule{rule(16379, own), rule(6379, own, operator, web), rule(9121, volume, prom)}))
		patchSpec(ns, "n", `{"network":{"metricsFrom":null}}`)
		Eventually(func() []networkingv1.NetworkPolicyIngressRule { return policy(ns, "n")().Spec.Ingress }, 10*time.Second).
			Should(Equal([]networkingv1.NetworkPolicyIngressRule{rule(16379, own), rule(6379, own, operator, web), rule(9121, volume)}))

		By("a peer the API server refuses is reported, and the last good policy stays")
		patchSpec(ns, "n", `{"network":{"clientFrom":[{"ipBlock":{"cidr":"10.0.0.0/33"}}]}}`)
		Eventually(progressingReason(ns, "n"), 20*time.Second).Should(Equal(valkeyv1.ReasonNetworkPolicyRefused))
		Expect(status.Get(getCluster(ns, "n").Status.Conditions, valkeyv1.ConditionProgressing).Message).To(ContainSubstring("spec.network.clientFrom"))
		Eventually(func() int { return eventsWithReason(ns, valkeyv1.EventNetworkPolicyRefused) }, 10*time.Second).Should(BeNumerically(">=", 1))
		Expect(policy(ns, "n")().Spec.Ingress).To(Equal([]networkingv1.NetworkPolicyIngressRule{rule(16379, own), rule(6379, own, operator, web), rule(9121, volume)}))
		patchSpec(ns, "n", `{"network":{"clientFrom":[{"ipBlock":{"cidr":"10.0.0.0/8"}}]}}`)
		Eventually(progressingReason(ns, "n"), 20*time.Second).ShouldNot(Equal(valkeyv1.ReasonNetworkPolicyRefused))

		By("Disabled deletes it")
		patchSpec(ns, "n", `{"network":{"policy":"Disabled"}}`)
		Eventually(policy(ns, "n"), 10*time.Second).Should(BeNil())
	})
})
