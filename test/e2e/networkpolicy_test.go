package e2e

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// The cluster's NetworkPolicy on a cluster that enforces policies (the local cluster runs
// kube-network-policies, test/localcluster/netpol.yaml): the bus port 16379 only from the
// cluster's own pods, the client port 6379 from anywhere.
var _ = Describe("The NetworkPolicy of a cluster", Label("networkpolicy"), Ordered, func() {
	var (
		cluster  *valkeyv1.ValkeyCluster
		outsider *corev1.Pod
	)

	BeforeAll(func() {
		requirePolicyEnforcement()
		cluster = newCluster(newNamespace("e2e-netpol"), "fenced", 1, 1, nil)
		outsider = startOutsider(newNamespace("e2e-outside"))
		waitReady(cluster, 4*time.Minute)
	})

	It("lets a pod of another namespace reach the client port 6379 but not the bus port 16379 nor the metrics port 9121", func() {
		for _, n := range clusterNodes(cluster) {
			ip := n.Status.Workload.PodIP
			// Policies are enforced shortly after they are written, not at once: wait for it.
			Eventually(func() string {
				out, _ := dialFrom(outsider, "", ip+":16379") // a failure is what is expected
				return out
			}).WithTimeout(time.Minute).WithPolling(time.Second).Should(ContainSubstring("i/o timeout"),
				"%s's bus port from namespace %s: dropped, not refused nor open", n.Name, outsider.Namespace)
			out, err := dialFrom(outsider, "", ip+":6379")
			Expect(err).NotTo(HaveOccurred(), "%s's client port from namespace %s: %s", n.Name, outsider.Namespace, out)
			Expect(out).To(ContainSubstring("open " + ip + ":6379"))
			out, _ = dialFrom(outsider, "", ip+":9121")
			Expect(out).To(ContainSubstring("i/o timeout"), "%s's metrics port (valkey-start) from namespace %s: only the volume controller may read it", n.Name, outsider.Namespace)
		}
	})

	It("lets the cluster's own pods reach each other's bus port 16379", func() {
		nodes := clusterNodes(cluster)
		Expect(nodes).To(HaveLen(2))
		for i, n := range nodes {
			from := getPod(n)
			peer := nodes[1-i].Status.Workload.PodIP
			out, err := dialFrom(from, "valkey", peer+":16379")
			Expect(err).NotTo(HaveOccurred(), "%s to %s's bus port: %s", n.Name, nodes[1-i].Name, out)
			Expect(out).To(ContainSubstring("open " + peer + ":16379"))
		}
		expectClusterOK(cluster)
	})
})

// requirePolicyEnforcement skips the calling specs on a cluster without kube-network-policies,
// and fails them when it is there but not running on every node.
func requirePolicyEnforcement() {
	var ds appsv1.DaemonSet
	err := k8s.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "kube-network-policies"}, &ds)
	if apierrors.IsNotFound(err) {
		Skip("this cluster does not enforce NetworkPolicies (no kube-system/kube-network-policies: " +
			"the local cluster applies test/localcluster/netpol.yaml when `make images` has built its image)")
	}
	Expect(err).NotTo(HaveOccurred())
	Expect(ds.Status.DesiredNumberScheduled).To(BeNumerically(">", 0), "kube-network-policies has no node")
	Expect(ds.Status.NumberReady).To(Equal(ds.Status.DesiredNumberScheduled), "kube-network-policies ready on every node")
}

// startOutsider runs a pod of the Valkey image, which holds kit, in namespace ns, and waits
// until it is Ready.
func startOutsider(ns string) *corev1.Pod {
	p := kitPod(ns, "outsider", "kit", nil)
	ExpectWithOffset(1, k8s.Create(ctx, p)).To(Succeed())
	EventuallyWithOffset(1, func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(p), p)).To(Succeed())
		g.Expect(isReady(p)).To(BeTrue(), "%s/%s Ready", ns, p.Name)
	}).WithTimeout(2 * time.Minute).Should(Succeed())
	return p
}

// dialFrom opens a TCP connection from inside pod p (container, or its only one when empty) to
// addr with kit, within 2 seconds, and returns what kit said ("open ADDR", or the dial error).
func dialFrom(p *corev1.Pod, container, addr string) (string, error) {
	args := []string{"-n", p.Namespace, "exec", p.Name}
	if container != "" {
		args = append(args, "-c", container)
	}
	out, err := kubectl(append(args, "--", "kit", "dial", addr, "2")...)
	return strings.TrimSpace(out), err
}

// kitPod is a bare pod (no owner) of the Valkey image, which holds kit, asleep in its
// container, as an unprivileged user: name in namespace ns, with labels.
func kitPod(ns, name, container string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](1000),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name: container, Image: valkeyImage, Command: []string{"kit", "sleep", "0"},
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr.To(false),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
		},
	}
}
