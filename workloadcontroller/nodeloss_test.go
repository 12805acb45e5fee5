package workloadcontroller_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// createK8sNode creates a Kubernetes node reporting Ready, as a kubelet registers one.
func createK8sNode(ctx context.Context) *corev1.Node {
	name := "k8s-" + rand.String(5)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}}}
	Expect(k8s.Create(ctx, node)).To(Succeed())
	setK8sNodeReady(ctx, node, corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status")
	return node
}

// setK8sNodeReady sets a Kubernetes node's Ready condition, as its kubelet (True) or the
// node lifecycle controller (Unknown, once the kubelet stops posting) does.
func setK8sNodeReady(ctx context.Context, node *corev1.Node, st corev1.ConditionStatus, reason, msg string) {
	Eventually(func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil {
			return err
		}
		node.Status.Conditions = []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: st, Reason: reason, Message: msg,
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(),
		}}
		return k8s.Status().Update(ctx, node)
	}).Should(Succeed())
}

// localVolume creates a local PersistentVolume on the Kubernetes node, bound to claim.
func localVolume(ctx context.Context, node *corev1.Node, ns, claim string) *corev1.PersistentVolume {
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "local-" + rand.String(6)},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: "/mnt/disks/" + claim}},
			ClaimRef:               &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: ns, Name: claim},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{node.Name},
				}},
			}}}},
		},
	}
	Expect(k8s.Create(ctx, pv)).To(Succeed())
	return pv
}

// runningReadyOn plays the StatefulSet controller and the scheduler: the node's pod, bound
// to the Kubernetes node, Running and Ready.
func runningReadyOn(ctx context.Context, n *valkeyv1.ValkeyNode, k8sNode *corev1.Node, ip string) *corev1.Pod {
	sts := waitStatefulSet(ctx, n)
	tmpl := *sts.Spec.Template.DeepCopy()
	tmpl.Spec.NodeName = k8sNode.Name
	pod := startPod(ctx, sts.Name+"-0", sts, tmpl)
	kubelet(ctx, pod, corev1.PodRunning, true, ip)
	Eventually(condition(ctx, n, valkeyv1.ConditionWorkloadReady)).Should(Equal("True/Ready"))
	return pod
}

var _ = Describe("A lost Kubernetes node", func() {
	It("makes WorkloadReady=False, NodeNotReady name the node, since when, and what to do about its local claim", func(ctx context.Context) {
		ns := newNamespace(ctx)
		k8sNode := createK8sNode(ctx)
		n := createNode(ctx, ns, func(n *valkeyv1.ValkeyNode) { inCluster(n); withPersistence(n) })
		playVolume(ctx, n, false, valkeyv1.ReasonCreating)
		Eventually(condition(ctx, n, valkeyv1.ConditionWorkloadReady)).Should(Equal("False/WaitingForVolume"))
		playVolume(ctx, n, true, valkeyv1.ReasonBound)
		pv := localVolume(ctx, k8sNode, ns, valkeyv1.ClaimName(n.Name))
		pod := runningReadyOn(ctx, n, k8sNode, "10.0.3.1")

		By("the kubelet stops posting: the node lifecycle controller marks the node Unknown")
		setK8sNodeReady(ctx, k8sNode, corev1.ConditionUnknown, "NodeStatusUnknown", "Kubelet stopped posting node status.")
		Eventually(condition(ctx, n, valkeyv1.ConditionWorkloadReady)).Should(Equal("False/NodeNotReady"))
		msg := message(ctx, n, valkeyv1.ConditionWorkloadReady)
		Expect(msg).To(HavePrefix("pod valkey-c-0-0-0 is on Kubernetes node " + k8sNode.Name + ", which is Unknown since "))
		Expect(msg).To(ContainSubstring("(NodeStatusUnknown: Kubelet stopped posting node status.)"))
		Expect(msg).To(ContainSubstring("claim valkey-c-0-0-data is on volume " + pv.Name + ", which only " + k8sNode.Name + " can mount"))
		Expect(msg).To(ContainSubstring("kubectl -n " + ns + " delete pvc valkey-c-0-0-data --wait=false"))
		Eventually(eventReasons(ctx, n)).Should(ContainElement(HavePrefix("Warning/NodeNotReady: pod valkey-c-0-0-0 is on Kubernetes node " + k8sNode.Name)))

		By("the pod is being deleted on the unreachable node")
		Expect(k8s.Delete(ctx, pod)).To(Succeed())
		Eventually(func() string { return message(ctx, n, valkeyv1.ConditionWorkloadReady) }).Should(
			HavePrefix("pod valkey-c-0-0-0 is being deleted on Kubernetes node " + k8sNode.Name + ", which is Unknown since "))
		Expect(condition(ctx, n, valkeyv1.ConditionWorkloadReady)()).To(Equal("False/NodeNotReady"))

		By("the node returns: WorkloadReady follows the pod again")
		setK8sNodeReady(ctx, k8sNode, corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status")
		Eventually(condition(ctx, n, valkeyv1.ConditionWorkloadReady)).Should(Equal("False/PodPending"))
	})

	It("without a local claim names the node only, and clears when the node is Ready again", func(ctx context.Context) {
		ns := newNamespace(ctx)
		k8sNode := createK8sNode(ctx)
		n := createNode(ctx, ns, inCluster)
		runningReadyOn(ctx, n, k8sNode, "10.0.3.2")

		setK8sNodeReady(ctx, k8sNode, corev1.ConditionFalse, "KubeletNotReady", "container runtime is down")
		Eventually(condition(ctx, n, valkeyv1.ConditionWorkloadReady)).Should(Equal("False/NodeNotReady"))
		Expect(message(ctx, n, valkeyv1.ConditionWorkloadReady)).To(MatchRegexp(
			`^pod valkey-c-0-0-0 is on Kubernetes node %s, which is NotReady since \S+ \(KubeletNotReady: container runtime is down\)$`, k8sNode.Name))

		setK8sNodeReady(ctx, k8sNode, corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status")
		Eventually(condition(ctx, n, valkeyv1.ConditionWorkloadReady)).Should(Equal("True/Ready"))

		By("a node object deleted under its pod counts as lost")
		Expect(k8s.Delete(ctx, k8sNode, client.PropagationPolicy(metav1.DeletePropagationBackground), &client.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})).To(Succeed())
		Eventually(condition(ctx, n, valkeyv1.ConditionWorkloadReady)).Should(Equal("False/NodeNotReady"))
		Expect(message(ctx, n, valkeyv1.ConditionWorkloadReady)).To(HaveSuffix("which no longer exists"))
	})
})
