package e2e

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// The edges a user, or another tenant, can push on: bad input refused at admission, and
// objects of the operator's names made by someone else left exactly as they are, while the
// cluster runs and its pods restart.
var _ = Describe("Edges", Label("edges"), func() {
	It("refuses, at admission, ACL rules that would let anyone in or stop restarted servers", func() {
		ns := newNamespace("edges-acl")
		passwordSecret(ns, "app-pw", "app-password")
		for _, rule := range []string{"NOPASS", "On", `~app:"x`, "~app:* +@all"} {
			c := buildCluster(ns, "acl", 1, 0, nil)
			u := appUser("app-pw")
			u.Rules = []string{"~app:*", rule}
			c.Spec.Users = []valkeyv1.UserSpec{u}
			Expect(k8s.Create(ctx, c)).To(MatchError(ContainSubstring("spec.users[0].rules[1]")), "rule %q", rule)
		}
		var list valkeyv1.ValkeyClusterList
		Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		Expect(list.Items).To(BeEmpty(), "nothing was admitted")
	})

	It("leaves someone else's NetworkPolicy, PodDisruptionBudget and restored password Secret of the cluster's names unchanged, through a pod restart", func() {
		ns := newNamespace("edges-foreign")
		policy := &networkingv1.NetworkPolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: valkeyv1.NetworkPolicyName("web")},
			Spec: networkingv1.NetworkPolicySpec{
				PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			},
		}
		budget := &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: valkeyv1.DisruptionBudgetName("web", 0)},
			Spec: policyv1.PodDisruptionBudgetSpec{
				MinAvailable: ptr.To(intstr.FromInt32(1)),
				Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			},
		}
		Expect(k8s.Create(ctx, policy)).To(Succeed())
		Expect(k8s.Create(ctx, budget)).To(Succeed())
		passwordSecret(ns, "monitor-pw", "monitor-password")
		// A password Secret of the cluster's generated name, restored from a backup before the
		// cluster is applied (so made by someone else, not the operator): used once annotated.
		restored := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: valkeyv1.PasswordSecretName("web"),
				Annotations: map[string]string{valkeyv1.AnnotationAdopt: "true"}},
			Data: map[string][]byte{valkeyv1.DefaultPasswordKey: []byte("restored-password")},
		}
		Expect(k8s.Create(ctx, restored)).To(Succeed())
		c := buildCluster(ns, "web", 1, 1, persistence("1Gi", expandableClass, valkeyv1.ReclaimDelete))
		c.Spec.Users = []valkeyv1.UserSpec{{Name: "monitor", Rules: []string{"+info", "+config|get"},
			PasswordSecrets: []valkeyv1.SecretKeyRef{{Name: "monitor-pw", Key: valkeyv1.DefaultPasswordKey}}}}
		Expect(k8s.Create(ctx, c)).To(Succeed())
		waitReady(c, 5*time.Minute)
		Eventually(func() string {
			cond := status.Get(getCluster(c).Status.Conditions, valkeyv1.ConditionProgressing)
			if cond == nil {
				return ""
			}
			return cond.Reason + ": " + cond.Message
		}).WithTimeout(time.Minute).Should(ContainSubstring("NetworkPolicy valkey-web exists and is not owned by ValkeyCluster web"))

		By("every pod restarted, one at a time, starts again")
		for _, n := range clusterNodes(c) {
			replacePod(n, 3*time.Minute)
			waitReady(c, 5*time.Minute)
		}

		By("each replica follows its primary again, authenticated as the replication user; what CONFIG GET shows is not the operator's password")
		var op corev1.Secret
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: valkeyv1.OperatorSecretName("web")}, &op)).To(Succeed())
		for _, n := range clusterNodes(c) {
			mon, err := dialNodeAs(n.Status.Workload.PodIP, "monitor", "monitor-password")
			Expect(err).NotTo(HaveOccurred())
			shown, err := mon.Do(ctx, mon.B().ConfigGet().Parameter("masterauth").Build()).AsStrMap()
			Expect(err).NotTo(HaveOccurred())
			Expect(shown["masterauth"]).NotTo(BeEmpty())
			Expect(shown["masterauth"]).NotTo(Equal(string(op.Data[valkeyv1.DefaultPasswordKey])))
			info, err := mon.Do(ctx, mon.B().Info().Section("replication").Build()).ToString()
			Expect(err).NotTo(HaveOccurred())
			if n.Status.Topology != nil && n.Status.Topology.Role == valkeyv1.RoleReplica {
				Expect(info).To(ContainSubstring("master_link_status:up"), n.Name)
			}
			mon.Close()
			_, err = dialNodeAs(n.Status.Workload.PodIP, valkeyv1.OperatorUser, shown["masterauth"])
			Expect(isAuthErr(err)).To(BeTrue(), "masterauth logs in as the operator on %s: %v", n.Name, err)
		}

		By("the restored password Secret is as it was made")
		var auth corev1.Secret
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(restored), &auth)).To(Succeed())
		Expect(auth.OwnerReferences).To(BeEmpty())
		Expect(auth.Data).To(Equal(restored.Data))

		By("their objects are as they made them")
		var p networkingv1.NetworkPolicy
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(policy), &p)).To(Succeed())
		Expect(p.OwnerReferences).To(BeEmpty(), "deleting the cluster must not delete their policy")
		Expect(p.Spec.PodSelector.MatchLabels).To(Equal(map[string]string{"app": "web"}))
		var b policyv1.PodDisruptionBudget
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(budget), &b)).To(Succeed())
		Expect(b.OwnerReferences).To(BeEmpty())
		Expect(b.Spec.Selector.MatchLabels).To(Equal(map[string]string{"app": "web"}))
	})
})
