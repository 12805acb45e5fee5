package topologycontroller_test

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
	"valkey.io/operator/topologycontroller"
)

// progressingMessage is the cluster's Progressing message.
func progressingMessage(ns, name string) string {
	if c := status.Get(getCluster(ns, name).Status.Conditions, valkeyv1.ConditionProgressing); c != nil {
		return c.Message
	}
	return ""
}

// Objects of the cluster's conventional names that someone else made (without the operator's
// labels, so the controller's caches do not see them) are never taken over: neither their spec
// nor their owners change, and the cluster says which object is in the way.
var _ = Describe("Same-named objects of someone else", func() {
	ctx := context.Background()

	It("leaves a NetworkPolicy of the cluster's name alone and reports it, and makes its own once it is gone", func() {
		ns := newNamespace()
		theirs := &networkingv1.NetworkPolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: valkeyv1.NetworkPolicyName("web")},
			Spec: networkingv1.NetworkPolicySpec{
				PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			},
		}
		Expect(k8s.Create(ctx, theirs)).To(Succeed())
		vc := newCluster(ns, "web", 1, 0)
		DeferCleanup(func() { Expect(k8s.Delete(ctx, vc)).To(Succeed()) })

		Eventually(progressingReason(ns, "web"), 20*time.Second).Should(Equal(valkeyv1.ReasonNetworkPolicyRefused))
		Expect(progressingMessage(ns, "web")).To(ContainSubstring("NetworkPolicy valkey-web exists and is not owned by ValkeyCluster web"))
		Eventually(func() int { return eventsWithReason(ns, valkeyv1.EventNetworkPolicyRefused) }, 10*time.Second).Should(BeNumerically(">=", 1))
		Consistently(func(g Gomega) {
			var cur networkingv1.NetworkPolicy
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(theirs), &cur)).To(Succeed())
			g.Expect(cur.OwnerReferences).To(BeEmpty(), "no ownerReference: deleting the cluster must not delete it")
			g.Expect(cur.Spec.PodSelector.MatchLabels).To(Equal(map[string]string{"app": "web"}))
			g.Expect(cur.Labels).To(BeEmpty())
		}, 3*time.Second).Should(Succeed())

		By("once theirs is deleted, the cluster's own is made")
		Expect(k8s.Delete(ctx, theirs)).To(Succeed())
		Eventually(func() bool {
			var cur networkingv1.NetworkPolicy
			return k8s.Get(ctx, client.ObjectKeyFromObject(theirs), &cur) == nil && metav1.IsControlledBy(&cur, vc)
		}, 20*time.Second).Should(BeTrue())
		Eventually(progressingReason(ns, "web"), 20*time.Second).ShouldNot(Equal(valkeyv1.ReasonNetworkPolicyRefused))
	})

	It("leaves a PodDisruptionBudget of a shard's name alone and reports it once, next to a NetworkPolicy of another", func() {
		ns := newNamespace()
		Expect(k8s.Create(ctx, &networkingv1.NetworkPolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: valkeyv1.NetworkPolicyName("pdb")},
			Spec:       networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
		})).To(Succeed())
		theirs := &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: valkeyv1.DisruptionBudgetName("pdb", 0)},
			Spec: policyv1.PodDisruptionBudgetSpec{
				MinAvailable: ptr.To(intstr.FromInt32(2)),
				Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "theirs"}},
			},
		}
		Expect(k8s.Create(ctx, theirs)).To(Succeed())
		vc := newCluster(ns, "pdb", 2, 0)
		DeferCleanup(func() { Expect(k8s.Delete(ctx, vc)).To(Succeed()) })

		Eventually(progressingReason(ns, "pdb"), 20*time.Second).Should(Equal(valkeyv1.ReasonNetworkPolicyRefused), "the policy comes first")
		Eventually(func() string { return progressingMessage(ns, "pdb") }, 20*time.Second).Should(SatisfyAll(
			ContainSubstring("PodDisruptionBudget "+theirs.Name+" exists and is not owned by ValkeyCluster pdb"),
			ContainSubstring("NetworkPolicy valkey-pdb exists and is not owned by ValkeyCluster pdb")))
		Eventually(func() int { return eventsWithReason(ns, valkeyv1.EventObjectNotOwned) }, 10*time.Second).Should(Equal(1))
		Consistently(func() int { return eventsWithReason(ns, valkeyv1.EventObjectNotOwned) }, 5*time.Second).Should(Equal(1), "one event, not one per reconcile")
		var cur policyv1.PodDisruptionBudget
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(theirs), &cur)).To(Succeed())
		Expect(cur.OwnerReferences).To(BeEmpty())
		Expect(cur.Spec.MinAvailable).To(Equal(ptr.To(intstr.FromInt32(2))))
		Expect(cur.Spec.Selector.MatchLabels).To(Equal(map[string]string{"app": "theirs"}))
		Eventually(func() error {
			var other policyv1.PodDisruptionBudget
			return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: valkeyv1.DisruptionBudgetName("pdb", 1)}, &other)
		}, 20*time.Second).Should(Succeed(), "the other shard's budget is made all the same")
	})

	DescribeTable("with tls.generate, leaves a Secret of a generated name alone, uses nothing of it, and creates no node",
		func(secret func(name string) string) {
			ns := newNamespace()
			name := secret("corp")
			data := map[string][]byte{"tls.crt": []byte("theirs"), "tls.key": []byte("theirs")}
			putSecret(ns, name, data)
			newTLSCluster(ns, "corp", 1, 0, map[string]any{"generate": true})
			msg := tlsCondition(ns, "corp", false, valkeyv1.ReasonTLSSecretNotOwned)
			Expect(msg).To(ContainSubstring("Secret " + name))
			Expect(msg).To(ContainSubstring("is not owned by ValkeyCluster corp"))
			Eventually(func() int { return eventsWithReason(ns, valkeyv1.ReasonTLSSecretNotOwned) }, 10*time.Second).Should(BeNumerically(">=", 1))
			Expect(listNodes(ns)).To(BeEmpty(), "no node is created")
			var cur corev1.Secret
			Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &cur)).To(Succeed())
			Expect(cur.Data).To(Equal(data), "their Secret is not overwritten")
			Expect(cur.OwnerReferences).To(BeEmpty())
		},
		Entry("the certificate Secret <cluster>-tls (cert-manager's, say)", valkeyv1.TLSSecretName),
		Entry("the CA Secret <cluster>-ca (a company CA, say)", valkeyv1.CASecretName),
	)

	DescribeTable("leaves a Secret of a generated name that someone else placed before the cluster alone, until it is annotated for adoption",
		func(secret func(name string) string, key string) {
			ns := newNamespace()
			name := secret("pre")
			data := map[string][]byte{key: []byte("user theirs reset on #" + strings.Repeat("a", 64) + " ~* +@all")}
			putSecret(ns, name, data)
			newCluster(ns, "pre", 1, 0)
			Eventually(func() *metav1.Condition {
				return status.Get(getCluster(ns, "pre").Status.Conditions, valkeyv1.ConditionReady)
			}, 20*time.Second).Should(And(Not(BeNil()),
				HaveField("Reason", valkeyv1.ReasonPasswordSecretNotOwned),
				HaveField("Message", ContainSubstring("the Secret "+name+" was not made by the operator")),
				HaveField("Message", ContainSubstring("annotate it valkey.io/adopt=true"))))
			Eventually(func() int { return eventsWithReason(ns, valkeyv1.ReasonPasswordSecretNotOwned) }, 10*time.Second).Should(BeNumerically(">=", 1))
			Consistently(func() int { return len(listNodes(ns)) }, 3*time.Second).Should(BeZero(), "no node starts with someone else's Secret")
			var cur corev1.Secret
			Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &cur)).To(Succeed())
			Expect(cur.Data).To(Equal(data), "their Secret is not overwritten")
			Expect(cur.OwnerReferences).To(BeEmpty())

			By("annotated for adoption, it is used")
			cur.Annotations = map[string]string{valkeyv1.AnnotationAdopt: "true"}
			Expect(k8s.Update(ctx, &cur)).To(Succeed())
			if key == valkeyv1.ACLFileKey {
				// A restored ACL Secret says the servers ran with users: the operator's
				// Secret must be restored with it, and is not generated anew.
				Eventually(func() string {
					return status.Get(getCluster(ns, "pre").Status.Conditions, valkeyv1.ConditionReady).Message
				}, 20*time.Second).Should(ContainSubstring("the operator's Secret " + valkeyv1.OperatorSecretName("pre")))
				return
			}
			Eventually(func() int { return len(listNodes(ns)) }, 30*time.Second).Should(Equal(1))
		},
		Entry("the password Secret <cluster>-auth", valkeyv1.PasswordSecretName, valkeyv1.DefaultPasswordKey),
		Entry("the operator's Secret <cluster>-operator", valkeyv1.OperatorSecretName, valkeyv1.DefaultPasswordKey),
		Entry("the ACL Secret <cluster>-acl, which asks for the operator's Secret restored with it", valkeyv1.ACLSecretName, valkeyv1.ACLFileKey),
	)
})

// racingClient is the suite's client with someone else's Secret slipped in between the
// controller's read and its create: the Create of the Secret name finds theirs, made a
// moment before (their own object, no owner, their data).
type racingClient struct {
	client.Client
	name string
	data map[string][]byte
}

func (c *racingClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	if s, ok := obj.(*corev1.Secret); ok && s.Name == c.name {
		theirs := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: s.Name}, Data: c.data}
		if err := c.Client.Create(ctx, theirs); client.IgnoreAlreadyExists(err) != nil {
			return err
		}
	}
	return c.Client.Create(ctx, obj, opts...)
}

var _ = Describe("A generated Secret someone else creates while the controller creates it", func() {

	DescribeTable("is refused as one placed before: neither used nor replaced, and no node is created",
		func(secret func(name string) string) {
			ctx := context.Background()
			ns := newNamespace()
			// One reconciler acts on the cluster: the suite's controller is stopped meanwhile.
			mgr.stop()
			DeferCleanup(func() { mgr = startManager(testOptions) })
			vc := newCluster(ns, "race", 1, 0)
			DeferCleanup(func() { Expect(k8s.Delete(ctx, vc)).To(Succeed()) })
			name := secret("race")
			data := map[string][]byte{valkeyv1.DefaultPasswordKey: []byte("theirs")}

			events, err := env.NewManager(topologycontroller.CacheOptions())
			Expect(err).NotTo(HaveOccurred())
			r := topologycontroller.NewReconciler(&racingClient{Client: k8s, name: name, data: data},
				events.GetEventRecorder(topologycontroller.Name), testOptions)
			_, err = r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(vc)})
			Expect(err).NotTo(HaveOccurred())

			Expect(status.Get(getCluster(ns, "race").Status.Conditions, valkeyv1.ConditionReady)).To(And(Not(BeNil()),
				HaveField("Reason", valkeyv1.ReasonPasswordSecretNotOwned),
				HaveField("Message", ContainSubstring("the Secret "+name+" was not made by the operator"))))
			Eventually(func() int { return eventsWithReason(ns, valkeyv1.ReasonPasswordSecretNotOwned) }, 10*time.Second).Should(Equal(1))
			Expect(listNodes(ns)).To(BeEmpty(), "no node starts with someone else's Secret")
			var cur corev1.Secret
			Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &cur)).To(Succeed())
			Expect(cur.Data).To(Equal(data), "their Secret is not overwritten")
			Expect(cur.OwnerReferences).To(BeEmpty())
		},
		Entry("the password Secret <cluster>-auth", valkeyv1.PasswordSecretName),
		Entry("the operator's Secret <cluster>-operator", valkeyv1.OperatorSecretName),
	)
})
