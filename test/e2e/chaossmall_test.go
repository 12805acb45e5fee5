package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// Small ephemeral clusters whose primary comes back empty: its server killed and its pod
// force-deleted, so that the new pod starts on an empty /data under a new node ID. With one
// or two shards no majority of primaries is left to elect the replica: the replica takes
// over (valkey-start's fencing when the old container restarts first, else the topology
// controller's CLUSTER FAILOVER TAKEOVER), the new node rejoins as its replica, and no
// acknowledged key is lost.
var _ = Describe("Small ephemeral clusters under acknowledged writes", Label("chaos"), func() {
	for _, shards := range []int32{1, 2} {
		It(fmt.Sprintf("a %d × 1 ephemeral cluster whose primary comes back empty", shards), func() {
			ns := newNamespace(fmt.Sprintf("e2e-small%d", shards))
			cluster := newCluster(ns, "small", shards, 1, nil)
			waitReady(cluster, 5*time.Minute)
			expectClusterOK(cluster)
			since := time.Now()
			underFault(cluster, fmt.Sprintf("ephemeral-%dx1-primary-empty", shards), func() {
				_, primary := replicaAndPrimary(cluster)
				pod := getPod(primary)
				out, err := kubectl("-n", ns, "exec", pod.Name, "-c", "valkey", "--", "kit", "kill", "KILL", "valkey-server")
				GinkgoWriter.Printf("kill valkey-server of %s: %v %s\n", primary.Name, err, out)
				deletePod(primary, "--grace-period=0", "--force")
			})
			GinkgoWriter.Printf("the topology controller's takeover: %v\n", clusterEvent(cluster, valkeyv1.EventFailoverTakeover, since))
		})
	}
})

// A primary's server that restarts in its own pod without its data (its /data emptied while
// it was stopped, then killed: a lost volume or a lost nodes.conf) comes back at the same
// address under a new node ID. Its replica still follows that address: it must not be given
// the empty data set. valkey-start starts such a server with the replication user off until
// the topology controller has settled the shard (docs/contract.md, "A server back without its
// data"); the replica keeps its keys and takes over.
var _ = Describe("A primary restarted in its pod without its data, under acknowledged writes", Label("chaos"), func() {
	for _, durable := range []bool{false, true} {
		kind := map[bool]string{false: "ephemeral", true: "persistent"}[durable]
		It(fmt.Sprintf("a 2 × 1 %s cluster keeps every acknowledged write", kind), func() {
			ns := newNamespace("e2e-wiped-" + kind)
			var p *valkeyv1.PersistenceSpec
			if durable {
				p = persistence("1Gi", expandableClass, valkeyv1.ReclaimDelete)
			}
			cluster := newCluster(ns, "wiped", 2, 1, p)
			waitReady(cluster, 5*time.Minute)
			expectClusterOK(cluster)
			since := time.Now()
			underFault(cluster, fmt.Sprintf("%s-2x1-primary-wiped-in-place", kind), func() {
				_, primary := replicaAndPrimary(cluster)
				pod := getPod(primary)
				restarts, _ := containerState(pod, "valkey")
				out, err := kubectl("-n", ns, "exec", pod.Name, "-c", "valkey", "--", "kit", "wipe", "/data", "valkey-server")
				// The container stops with its server: the exec may be killed with it (137)
				// once the signal was sent.
				if !strings.Contains(out, "sent signal 9 to valkey-server") {
					Expect(err).NotTo(HaveOccurred(), out)
				}
				GinkgoWriter.Printf("wiped /data of %s and killed its server: %s\n", primary.Name, out)
				Eventually(func() int32 {
					n, _ := containerState(getPod(primary), "valkey")
					return n
				}).WithTimeout(2*time.Minute).Should(BeNumerically(">", restarts), "the container restarted in its pod")
				Expect(getPod(primary).UID).To(Equal(pod.UID), "the same pod")
			})
			GinkgoWriter.Printf("events: %v; takeover: %v\n", clusterEventReasons(cluster), clusterEvent(cluster, valkeyv1.EventFailoverTakeover, since))
		})
	}
})

// A bare pod that carries the labels of a node's pod (anyone allowed to create pods in the
// namespace can make one) is not the node's pod: the workload controller finds a node's pod
// by ownership (docs/contract.md, docs/security.md), so the node's status.workload keeps
// naming its own pod, no controller ever dials the impostor, and a Warning event ForeignPod on
// the node names it. The writer loses nothing meanwhile.
var _ = Describe("A bare pod carrying a node's labels, under acknowledged writes", Label("chaos"), func() {
	It("a 1 × 1 ephemeral cluster keeps its own pods beside an impostor of its primary's pod", func() {
		ns := newNamespace("e2e-impostor")
		cluster := newCluster(ns, "impostor", 1, 1, nil)
		waitReady(cluster, 5*time.Minute)
		expectClusterOK(cluster)
		underFault(cluster, "impostor-pod", func() {
			_, primary := replicaAndPrimary(cluster)
			own := getPod(primary)
			impostor := startImpostor(own)
			GinkgoWriter.Printf("impostor %s at %s carries the labels of %s (%s at %s): %v\n",
				impostor.Name, impostor.Status.PodIP, primary.Name, own.Name, own.Status.PodIP, impostor.Labels)

			Consistently(func(g Gomega) {
				var p corev1.Pod
				g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(impostor), &p)).To(Succeed())
				g.Expect(p.UID).To(Equal(impostor.UID), "the impostor is still there")
				g.Expect(metav1.GetControllerOf(&p)).To(BeNil(), "%s is still a bare pod (nothing adopted it)", p.Name)
				var nodes valkeyv1.ValkeyNodeList
				g.Expect(k8s.List(ctx, &nodes, client.InNamespace(ns), client.MatchingLabels{valkeyv1.LabelCluster: cluster.Name})).To(Succeed())
				g.Expect(nodes.Items).To(HaveLen(2))
				for _, n := range nodes.Items {
					g.Expect(n.Status.Workload).NotTo(BeNil(), "%s status.workload", n.Name)
					g.Expect(n.Status.Workload.PodName).NotTo(Equal(impostor.Name), "%s status.workload.podName", n.Name)
					g.Expect(n.Status.Workload.PodIP).NotTo(Equal(impostor.Status.PodIP), "%s status.workload.podIP", n.Name)
					if n.Name == primary.Name {
						g.Expect(n.Status.Workload.PodName).To(Equal(own.Name), "%s reports its own pod", n.Name)
						g.Expect(n.Status.Workload.PodIP).To(Equal(own.Status.PodIP), "%s reports its own pod's IP", n.Name)
					}
				}
			}).WithTimeout(30*time.Second).WithPolling(time.Second).Should(Succeed(), "no node takes the impostor for its pod")

			Eventually(func() []string {
				var notes []string
				for _, e := range warningEvents(ns, "ValkeyNode", primary.Name, valkeyv1.EventForeignPod) {
					notes = append(notes, e.Note)
				}
				return notes
			}).WithTimeout(time.Minute).Should(ContainElement(ContainSubstring(impostor.Name)),
				"a Warning event ForeignPod on %s names %s", primary.Name, impostor.Name)
			GinkgoWriter.Printf("the client Service %s selects the impostor by its labels: %v\n",
				valkeyv1.ClientServiceName(cluster.Name), serviceSelects(ns, valkeyv1.ClientServiceName(cluster.Name), impostor.Status.PodIP))

			Expect(k8s.Delete(ctx, impostor, client.GracePeriodSeconds(0))).To(Succeed())
			Eventually(func() bool {
				return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(impostor), &corev1.Pod{}))
			}).WithTimeout(time.Minute).Should(BeTrue(), "the impostor is gone")
		})
	})
})

// startImpostor runs a bare pod (no owner) of the Valkey image, asleep, in own's namespace
// with every label of own, and waits until it runs with an IP. It is deleted after the spec
// if it is still there.
func startImpostor(own *corev1.Pod) *corev1.Pod {
	// Not "<StatefulSet>-<ordinal>": the StatefulSet adopts no orphan of another name.
	p := kitPod(own.Namespace, "impostor", "valkey", maps.Clone(own.Labels))
	ExpectWithOffset(1, k8s.Create(ctx, p)).To(Succeed())
	DeferCleanup(func() { _ = client.IgnoreNotFound(k8s.Delete(context.Background(), p, client.GracePeriodSeconds(0))) })
	EventuallyWithOffset(1, func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(p), p)).To(Succeed())
		g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning), "%s Running", p.Name)
		g.Expect(p.Status.PodIP).NotTo(BeEmpty(), "%s has an IP", p.Name)
	}).WithTimeout(2 * time.Minute).Should(Succeed())
	return p
}

// serviceSelects tells whether an EndpointSlice of the Service names the address ip.
func serviceSelects(ns, service, ip string) bool {
	var list discoveryv1.EndpointSliceList
	ExpectWithOffset(1, k8s.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{discoveryv1.LabelServiceName: service})).To(Succeed())
	for _, s := range list.Items {
		for _, e := range s.Endpoints {
			if slices.Contains(e.Addresses, ip) {
				return true
			}
		}
	}
	return false
}
