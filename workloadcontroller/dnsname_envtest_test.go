package workloadcontroller_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

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

	It("replaces a StatefulSet made without serviceName (immutable) by one with it, its pod orphaned and kept, before any roll", func(ctx context.Context) {
		ns := newNamespace(ctx)
		By("a node whose StatefulSet an earlier version made (no serviceName, an older template), before its volume is reported")
		n := createNode(ctx, ns, func(n *valkeyv1.ValkeyNode) { announceHostname(n); withPersistence(n) })
		n = getNode(ctx, n)
		Expect(k8s.Create(ctx, earlierStatefulSet(ns, n))).To(Succeed())
		playVolume(ctx, n, true, valkeyv1.ReasonBound)
		pod := runningReady(ctx, n, "10.0.3.1")

		By("deleted with its pod orphaned, no roll requested first")
		Eventually(func() []string { return statefulSet(ctx, n)().Finalizers }).Should(ContainElement(metav1.FinalizerOrphanDependents))
		old := statefulSet(ctx, n)()
		Expect(old.DeletionTimestamp).NotTo(BeNil())
		Eventually(condition(ctx, n, valkeyv1.ConditionRollPending)).Should(Equal("True/TemplateChanged"),
			"the roll its template needs is requested meanwhile, so the topology controller orders it with the others")
		Expect(getNode(ctx, n).Status.Conditions).To(ContainElement(HaveField("Message",
			ContainSubstring("meanwhile StatefulSet valkey-c-0-0 is being made again with serviceName valkey-c-nodes"))))
		Expect(eventReasons(ctx, n)()).To(ContainElement(And(
			HavePrefix("Normal/"+valkeyv1.EventWorkloadReplaced+": StatefulSet valkey-c-0-0 was made without serviceName valkey-c-nodes"),
			ContainSubstring("the pod runs on"))))

		By("the garbage collector's part: the pod loses its owner, the StatefulSet its finalizer")
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
		pod.OwnerReferences = nil
		Expect(k8s.Update(ctx, pod)).To(Succeed())
		old.Finalizers = nil
		Expect(k8s.Update(ctx, old)).To(Succeed())

		By("made again as it was, with the serviceName: the pod, still there, is not restarted")
		Eventually(func() string {
			if s := statefulSet(ctx, n)(); s != nil && s.UID != old.UID {
				return s.Spec.ServiceName
			}
			return ""
		}).Should(Equal("valkey-c-nodes"))
		Expect(image(ctx, n)()).To(Equal("valkey/valkey:7.2"))
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{})).To(Succeed())
		Eventually(specOwners(ctx, n)).Should(ConsistOf(valkeyv1.FieldManagerWorkload+"/Apply"),
			"what the create wrote is owned by apply at once, so the roll removes the earlier template's leftovers in one write")

		By("then the roll to this release's template, by handshake, announcing the name its new pod has")
		Consistently(condition(ctx, n, valkeyv1.ConditionRollPending)).Should(Equal("True/TemplateChanged"))
		Expect(configMap(ctx, n)()).NotTo(ContainSubstring("cluster-announce-hostname"))
		playTopology(ctx, n, 0, approved())
		Eventually(image(ctx, n)).Should(Equal("valkey/valkey:8.0"))
		Eventually(configMap(ctx, n)).Should(ContainSubstring("\ncluster-announce-hostname \"valkey-c-0-0-0.valkey-c-nodes." + ns + ".svc.cluster.local\"\n"))
		Expect(statefulSet(ctx, n)().Spec.ServiceName).To(Equal("valkey-c-nodes"))
	})
})

// earlierStatefulSet is node c-0-0's StatefulSet as an earlier release made it: no
// serviceName, an older template.
func earlierStatefulSet(ns string, n *valkeyv1.ValkeyNode) *appsv1.StatefulSet {
	labels := map[string]string{valkeyv1.LabelNode: "c-0-0", valkeyv1.LabelManagedBy: valkeyv1.ManagedByValue, valkeyv1.LabelName: valkeyv1.NameValue}
	return &appsv1.StatefulSet{
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
}

var _ = Describe("Field ownership of an earlier release", func() {
	It("moves what an earlier release wrote by update to server-side apply, so a field it no longer sets is removed", func(ctx context.Context) {
		ns := newNamespace(ctx)
		n := getNode(ctx, createNode(ctx, ns, func(n *valkeyv1.ValkeyNode) { inCluster(n); withPersistence(n) }))
		By("a StatefulSet written by update under the controller's binary name, with an annotation this release does not set")
		old := earlierStatefulSet(ns, n)
		old.Annotations = map[string]string{"valkey.io/earlier-release": "set by update"}
		old.Spec.ServiceName = "valkey-c-nodes"
		Expect(k8s.Create(ctx, old, client.FieldOwner("workload-controller"))).To(Succeed())
		playVolume(ctx, n, true, valkeyv1.ReasonBound)
		runningReady(ctx, n, "10.0.3.1")
		playTopology(ctx, n, 0, approved())
		Eventually(image(ctx, n)).Should(Equal("valkey/valkey:8.0"))

		By("after this release's first apply: no field owned by update under its names, the annotation gone")
		Eventually(specOwners(ctx, n)).Should(ConsistOf(valkeyv1.FieldManagerWorkload + "/Apply"))
		Eventually(func() map[string]string { return statefulSet(ctx, n)().Annotations }).ShouldNot(HaveKey("valkey.io/earlier-release"))
	})
})

// specOwners lists the managers of the node's StatefulSet (not its status) as
// "manager/operation".
func specOwners(ctx context.Context, n *valkeyv1.ValkeyNode) func() []string {
	return func() []string {
		var owners []string
		for _, m := range statefulSet(ctx, n)().ManagedFields {
			if m.Subresource == "" {
				owners = append(owners, m.Manager+"/"+string(m.Operation))
			}
		}
		return owners
	}
}
