package e2e

import (
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// Placement, drains and node loss on the three-node local cluster (`make cluster-up NODES=3`;
// skipped on fewer nodes). One persistent 3 × 1 cluster, under a writer that counts a key only
// once a replica has it (WAIT 1), goes through: placement, a drain of the Kubernetes node
// holding two primaries, the loss of a node holding a primary and its return. Each step reports
// acknowledged and lost keys. A failed spec does not stop the next one.
var _ = Describe("Placement and node loss on three Kubernetes nodes", Label("placement"), Ordered, ContinueOnFailure, func() {
	var (
		ns      string
		cluster *valkeyv1.ValkeyCluster
	)

	BeforeAll(func() {
		if n := len(readyKubeNodes()); n < 3 {
			Skip(fmt.Sprintf("needs three Ready Kubernetes nodes (make cluster-up NODES=3), the cluster has %d", n))
		}
		ns = newNamespace("e2e-placement")
		cluster = newCluster(ns, "spread", 3, 1, persistence("1Gi", expandableClass, valkeyv1.ReclaimDelete))
		waitReady(cluster, 6*time.Minute)
		expectClusterOK(cluster)
	})

	It("places every shard's two nodes on different Kubernetes nodes, with one disruption budget per shard", func() {
		w := startAckWriter(cluster, "placed")
		Eventually(w.count).WithTimeout(time.Minute).Should(BeNumerically(">", 200), "the writer is under way")
		hosts := map[int32][]string{}
		for _, n := range clusterNodes(cluster) {
			hosts[n.Spec.Shard] = append(hosts[n.Spec.Shard], kubeNodeOf(n))
		}
		GinkgoWriter.Printf("Kubernetes node of each shard's nodes: %v\n", hosts)
		for shard, on := range hosts {
			Expect(on).To(HaveLen(2), "shard %d", shard)
			Expect(on[0]).NotTo(Equal(on[1]), "shard %d has both its nodes on %s", shard, on[0])
		}
		var pdbs policyv1.PodDisruptionBudgetList
		Expect(k8s.List(ctx, &pdbs, client.InNamespace(ns))).To(Succeed())
		for shard := range int32(3) {
			pdb := shardPDB(pdbs.Items, cluster.Name, shard)
			Expect(pdb).NotTo(BeNil(), "PodDisruptionBudget of shard %d", shard)
			Expect(pdb.Spec.MaxUnavailable).NotTo(BeNil(), "maxUnavailable of shard %d", shard)
			Expect(pdb.Spec.MaxUnavailable.IntValue()).To(Equal(1), "maxUnavailable of shard %d", shard)
		}
		expectAcked(cluster, w, "placed")
	})

	It("drains the Kubernetes node holding two primaries: budgets respected, every primary handed over first, 0 acknowledged keys lost", func() {
		host := arrangeTwoPrimaries(cluster)
		var primaries []valkeyv1.ValkeyNode
		for _, n := range byHost(cluster)[host] {
			if valkeyRole(n, password(cluster)) == "master" {
				primaries = append(primaries, n)
			}
		}
		w := startAckWriter(cluster, "drain")
		Eventually(w.count).WithTimeout(time.Minute).Should(BeNumerically(">", 200), "the writer is under way")
		obs := observeDrain(cluster, host)
		logs := followLogs(cluster, primaries, "hand-over")
		since := time.Now()
		DeferCleanup(kubectl, "uncordon", host) // also when a step below fails
		out, err := kubectl("drain", host, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=5m")
		Expect(err).NotTo(HaveOccurred(), out)
		drained := time.Since(since).Round(time.Second)
		handedOver, maxDown, maxUnready := obs.stop()
		for name, lines := range logs() {
			GinkgoWriter.Printf("%s: %s\n", name, strings.Join(lines, " | "))
		}
		GinkgoWriter.Printf("%s drained in %s; replica seen the master while the old primary's pod was there: %v; most pods of one shard taken at once: %d (not Ready at once: %d)\n",
			host, drained, handedOver, maxDown, maxUnready)
		out, err = kubectl("uncordon", host)
		Expect(err).NotTo(HaveOccurred(), out)
		waitReady(cluster, 5*time.Minute)
		expectAcked(cluster, w, "drain")
		Expect(primaries).To(HaveLen(2), "primaries on %s", host)
		for _, p := range primaries {
			Expect(handedOverInLog(cluster, p, since.Add(-time.Second))).To(BeTrue(), "%s handed over to its replica (CLUSTER FAILOVER) before it stopped", p.Name)
			Expect(handedOver).To(HaveKey(p.Name), "%s drained", p.Name)
		}
		Expect(maxDown).To(Equal(1), "a drain never takes a shard's two pods at once")
		expectClusterCheck(cluster)
	})

	var (
		lost             valkeyv1.ValkeyNode
		lostHost, lostID string
	)
	It("loses the Kubernetes node of a primary: failover, Degraded, then Ready on the survivors, 0 acknowledged keys lost", func() {
		lost, lostHost = primaryOnStoppableNode(cluster)
		lostID = myID(lost, password(cluster))
		host := lostHost
		w := startAckWriter(cluster, "stop-node")
		Eventually(w.count).WithTimeout(time.Minute).Should(BeNumerically(">", 200), "the writer is under way")
		since := time.Now()
		out, err := localCluster("stop-node", fmt.Sprint(kubeNodeIndex(host)))
		Expect(err).NotTo(HaveOccurred(), out)
		DeferCleanup(func() { // the next spec brings the node back; this one only when it fails
			if CurrentSpecReport().Failed() {
				startKubeNode(host)
			}
		})
		expectPromotedPartner(cluster, lost)
		promoted := time.Since(since).Round(time.Second)
		Eventually(func() string { return conditionOf(cluster, valkeyv1.ConditionDegraded) }).
			WithTimeout(3*time.Minute).Should(HavePrefix("True "+valkeyv1.ReasonNodesLost), "Degraded while %s is lost", host)
		degraded := time.Since(since).Round(time.Second)
		why := status.Get(nodeByName(cluster, lost.Name).Status.Conditions, valkeyv1.ConditionWorkloadReady)
		Expect(why).NotTo(BeNil())
		Expect(why.Reason).To(Equal(valkeyv1.ReasonNodeNotReady), "%s says why its pod is not Ready: %s", lost.Name, why.Message)
		GinkgoWriter.Printf("%s WorkloadReady: %s %s\n", lost.Name, why.Reason, why.Message)
		Eventually(func() string { return conditionOf(cluster, valkeyv1.ConditionReady) }).
			WithTimeout(3*time.Minute).Should(HavePrefix("True"), "Ready on the survivors")
		GinkgoWriter.Printf("%s stopped: replica of %s promoted after %s, Degraded after %s (%s), Ready on the survivors after %s\n",
			host, lost.Name, promoted, degraded, conditionOf(cluster, valkeyv1.ConditionDegraded), time.Since(since).Round(time.Second))
		expectAcked(cluster, w, "stop-node")
	})

	It("brings the Kubernetes node back: the old primary rejoins as a replica with its node ID", func() {
		Expect(lostHost).NotTo(BeEmpty(), "the previous spec stopped a node")
		host := lostHost
		// While a shard has no replica, WAIT 1 acknowledges none of its keys and the writer
		// waits on the first such key: it is under way before the node returns, acknowledges
		// again once the old primary has rejoined.
		w := startAckWriter(cluster, "start-node")
		since := time.Now()
		startKubeNode(host)
		waitReady(cluster, 5*time.Minute)
		Eventually(w.count).WithTimeout(time.Minute).Should(BeNumerically(">", 200), "the writer acknowledges again")
		Eventually(func() string { return conditionOf(cluster, valkeyv1.ConditionDegraded) }).
			WithTimeout(time.Minute).Should(HavePrefix("False"), "Degraded no more")
		back := nodeByName(cluster, lost.Name)
		Expect(valkeyRole(back, password(cluster))).To(Equal("slave"), "%s rejoined as a replica", lost.Name)
		Expect(myID(back, password(cluster))).To(Equal(lostID), "%s kept its node ID", lost.Name)
		GinkgoWriter.Printf("%s back: %s rejoined as a replica with node ID %s, Ready after %s\n",
			host, lost.Name, lostID, time.Since(since).Round(time.Second))
		expectAcked(cluster, w, "start-node")
		expectClusterOK(cluster)
		expectClusterCheck(cluster)
	})
})

// expectAcked stops the writer, reports acknowledged and lost keys and checks none was lost.
func expectAcked(c *valkeyv1.ValkeyCluster, w *ackWriter, prefix string) {
	acked, refused := w.stop()
	lost, unreadable := lostKeys(c, prefix, acked)
	line := fmt.Sprintf("acked=%d lost=%d unreadable=%d refused=%v", len(acked), lost, unreadable, refused)
	GinkgoWriter.Printf("placement %s: %s\n", prefix, line)
	AddReportEntry("placement "+prefix, line)
	ExpectWithOffset(1, acked).NotTo(BeEmpty(), "keys acknowledged")
	ExpectWithOffset(1, lost+unreadable).To(BeZero(), "acknowledged keys lost out of %d", len(acked))
}
