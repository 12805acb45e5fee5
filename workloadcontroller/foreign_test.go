package workloadcontroller_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// A ConfigMap of a node's config name that someone else made (without the operator's labels,
// so the cache does not show it) is never taken over: the node says so, no workload is
// created, and once it is gone the node's own objects are made.
var _ = Describe("Same-named objects of someone else", func() {
	It("leaves a ConfigMap of the node's name alone, creates no workload, and reports it", func(ctx context.Context) {
		ns := newNamespace(ctx)
		theirs := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: valkeyv1.ConfigMapName("c-0-0")},
			Data:       map[string]string{"app.properties": "theirs"},
		}
		Expect(k8s.Create(ctx, theirs)).To(Succeed())
		n := createNode(ctx, ns, nil)

		Eventually(condition(ctx, n, valkeyv1.ConditionWorkloadReady)).Should(Equal("False/" + valkeyv1.ReasonObjectNotOwned))
		Expect(message(ctx, n, valkeyv1.ConditionWorkloadReady)).To(ContainSubstring("ConfigMap " + theirs.Name + " exists and is not owned by ValkeyNode c-0-0"))
		Eventually(eventReasons(ctx, n)).Should(ContainElement(HavePrefix("Warning/" + valkeyv1.EventObjectNotOwned)))
		var cur corev1.ConfigMap
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(theirs), &cur)).To(Succeed())
		Expect(cur.Data).To(Equal(theirs.Data))
		Expect(cur.OwnerReferences).To(BeEmpty())
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: valkeyv1.WorkloadName("c-0-0")}, &appsv1.StatefulSet{})).
			To(MatchError(ContainSubstring("not found")), "no workload while the ConfigMap is someone else's")

		By("theirs deleted: the node's own ConfigMap and StatefulSet are made at its next look, within 30 s")
		Expect(k8s.Delete(ctx, &cur)).To(Succeed())
		Eventually(statefulSet(ctx, n), 45*time.Second).ShouldNot(BeNil())
		Eventually(configMap(ctx, n)).ShouldNot(BeEmpty())
	})

	It("leaves a StatefulSet of the node's name alone and reports it", func(ctx context.Context) {
		ns := newNamespace(ctx)
		labels := map[string]string{"app": "theirs"}
		theirs := &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: valkeyv1.WorkloadName("c-0-0")},
			Spec: appsv1.StatefulSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
				},
			},
		}
		Expect(k8s.Create(ctx, theirs)).To(Succeed())
		n := createNode(ctx, ns, nil)

		Eventually(condition(ctx, n, valkeyv1.ConditionWorkloadReady)).Should(Equal("False/" + valkeyv1.ReasonObjectNotOwned))
		Expect(message(ctx, n, valkeyv1.ConditionWorkloadReady)).To(ContainSubstring("StatefulSet " + theirs.Name + " exists and is not owned"))
		var cur appsv1.StatefulSet
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(theirs), &cur)).To(Succeed())
		Expect(cur.Spec.Template.Spec.Containers).To(HaveLen(1))
		Expect(cur.Spec.Template.Spec.Containers[0].Image).To(Equal("nginx"))
		Expect(cur.OwnerReferences).To(BeEmpty())
	})
})

// A pod that carries a node's labels (anyone who may create pods in the namespace can label
// one so) is the node's only when the node's workload made it: its address is dialed with
// the operator's credentials, read for disk usage and named in the server certificate.
var _ = Describe("Pods with a node's labels that its workload did not make", func() {
	It("never reports an impostor's address, before or beside the node's own pod", func(ctx context.Context) {
		ns := newNamespace(ctx)
		n := createNode(ctx, ns, inCluster)
		sts := waitStatefulSet(ctx, n)
		Eventually(condition(ctx, n, valkeyv1.ConditionWorkloadReady)).Should(Equal("False/Creating"))

		By("a bare pod with the pod template's labels and annotations, Running and Ready, before the node's own pod")
		bare := createPod(ctx, ns, "impostor", sts.Spec.Template)
		kubelet(ctx, bare, corev1.PodRunning, true, "10.66.0.1")
		Consistently(workloadStatus(ctx, n), 2*time.Second).Should(And(HaveField("PodIP", BeEmpty()), HaveField("PodName", BeEmpty())),
			"the impostor is never the node's pod")
		Eventually(eventReasons(ctx, n)).Should(ContainElement(And(
			HavePrefix("Warning/"+valkeyv1.EventForeignPod), ContainSubstring("pod impostor"), ContainSubstring("has no controller"))))
		Expect(condition(ctx, n, valkeyv1.ConditionWorkloadReady)()).To(Equal("False/Creating"))

		By("the node's own pod starts: its address is the one reported")
		pod := startStatefulSetPod(ctx, n)
		kubelet(ctx, pod, corev1.PodRunning, true, "10.0.9.1")
		Eventually(condition(ctx, n, valkeyv1.ConditionWorkloadReady)).Should(Equal("True/Ready"))
		Expect(workloadStatus(ctx, n)()).To(And(HaveField("PodIP", "10.0.9.1"), HaveField("PodName", pod.Name)))

		By("newer pods beside the running one: a bare one, and one whose ownerReference names the StatefulSet but not its UID")
		beside := createPod(ctx, ns, "beside", sts.Spec.Template)
		kubelet(ctx, beside, corev1.PodRunning, true, "10.66.0.2")
		forged := createPod(ctx, ns, "forged", sts.Spec.Template, metav1.OwnerReference{
			APIVersion: "apps/v1", Kind: "StatefulSet", Name: sts.Name, UID: "0d5c8e3a-forged", Controller: ptr.To(true),
		})
		kubelet(ctx, forged, corev1.PodRunning, true, "10.66.0.3")
		Consistently(workloadStatus(ctx, n), 2*time.Second).Should(And(HaveField("PodIP", "10.0.9.1"), HaveField("PodName", pod.Name)),
			"the node's own pod stays the one reported")
		Eventually(eventReasons(ctx, n)).Should(ContainElements(
			And(HavePrefix("Warning/"+valkeyv1.EventForeignPod), ContainSubstring("pod beside")),
			And(HavePrefix("Warning/"+valkeyv1.EventForeignPod), ContainSubstring("pod forged"), ContainSubstring("0d5c8e3a-forged"))))
		Expect(condition(ctx, n, valkeyv1.ConditionWorkloadReady)()).To(Equal("True/Ready"))
	})

	It("takes a Deployment's pod through its ReplicaSet, and no pod of a ReplicaSet the Deployment does not control", func(ctx context.Context) {
		ns := newNamespace(ctx)
		n := createNode(ctx, ns, func(n *valkeyv1.ValkeyNode) { n.Spec.WorkloadType = valkeyv1.WorkloadDeployment })
		dep := &appsv1.Deployment{}
		Eventually(func() error {
			return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: valkeyv1.WorkloadName(n.Name)}, dep)
		}).Should(Succeed())

		By("a ReplicaSet someone else made, with the Deployment's labels, and its Ready pod")
		theirs := &appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: dep.Name + "-6b8f9", Labels: dep.Spec.Template.Labels},
			Spec:       appsv1.ReplicaSetSpec{Selector: dep.Spec.Selector, Template: dep.Spec.Template},
		}
		Expect(k8s.Create(ctx, theirs)).To(Succeed())
		impostor := startPod(ctx, dep.Name+"-6b8f9-xq2wz", theirs, dep.Spec.Template)
		kubelet(ctx, impostor, corev1.PodRunning, true, "10.66.1.1")
		Consistently(workloadStatus(ctx, n), 2*time.Second).Should(HaveField("PodIP", BeEmpty()))
		Eventually(eventReasons(ctx, n)).Should(ContainElement(And(
			HavePrefix("Warning/"+valkeyv1.EventForeignPod), ContainSubstring("pod "+impostor.Name))))

		By("the Deployment's own ReplicaSet makes the node's pod")
		pod := startDeploymentPod(ctx, dep, "t7k2p")
		kubelet(ctx, pod, corev1.PodRunning, true, "10.0.9.2")
		Eventually(condition(ctx, n, valkeyv1.ConditionWorkloadReady)).Should(Equal("True/Ready"))
		Expect(workloadStatus(ctx, n)()).To(And(HaveField("PodIP", "10.0.9.2"), HaveField("PodName", pod.Name)))
	})
})

// createPod creates a pod from tmpl's labels, annotations and spec, with the given
// ownerReferences (none: a bare pod), as anyone who may create pods can.
func createPod(ctx context.Context, ns, name string, tmpl corev1.PodTemplateSpec, refs ...metav1.OwnerReference) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: tmpl.Labels, Annotations: tmpl.Annotations, OwnerReferences: refs},
		Spec:       *tmpl.Spec.DeepCopy(),
	}
	Expect(k8s.Create(ctx, pod)).To(Succeed())
	return pod
}
