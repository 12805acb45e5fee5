package e2e

import (
	"fmt"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/valkey-io/valkey-go"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// The chaos suite's second round: a 3 × 1 cluster with AOF (everysec: a killed server loses
// nothing it wrote, so both copies of a shard survive a double kill) goes through
// partitions, a full disk, a double kill, a kill during a full sync, a change of the topology
// controller's partition count during a roll, and the loss of a Kubernetes node for good,
// under the same acknowledged writer as the first round.
var _ = Describe("Faults under acknowledged writes, second round", Label("chaos"), Ordered, ContinueOnFailure, func() {
	var cluster *valkeyv1.ValkeyCluster

	BeforeAll(func() {
		ns := newNamespace("e2e-chaos2")
		p := persistence("1Gi", expandableClass, valkeyv1.ReclaimRetain)
		p.AOF = &valkeyv1.AOFSpec{Enabled: true}
		cluster = newCluster(ns, "chaos", 3, 1, p)
		waitReady(cluster, 6*time.Minute)
		expectClusterOK(cluster)
	})

	It("a primary cut off from every other pod for 60 s, then healed", func() {
		underFault(cluster, "partition-primary-60s", func() {
			_, primary := replicaAndPrimary(cluster)
			_, id := containerState(getPod(primary), "valkey")
			out, err := localCluster("isolate", id, "60")
			Expect(err).NotTo(HaveOccurred(), out)
			GinkgoWriter.Printf("%s", out)
		})
	})

	It("a primary's volume filled to 100 % under writes, then freed", func() {
		underFault(cluster, "disk-full", func() {
			_, primary := replicaAndPrimary(cluster)
			pod := getPod(primary)
			out, err := kubectl("-n", cluster.Namespace, "exec", pod.Name, "-c", "valkey", "--", "kit", "fill", "/data/filler")
			Expect(err).NotTo(HaveOccurred(), out)
			GinkgoWriter.Printf("%s: %s", pod.Name, out)
			pw := password(cluster)
			Eventually(func() string {
				m, _ := infoAt(ctx, pod.Status.PodIP, pw, "persistence", 2*time.Second)
				return m["aof_last_write_status"]
			}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Equal("err"), "the server sees its disk full")
			reportNode(cluster, primary.Name, "with its disk full")
			out, err = kubectl("-n", cluster.Namespace, "exec", pod.Name, "-c", "valkey", "--", "kit", "rm", "/data/filler")
			Expect(err).NotTo(HaveOccurred(), out)
			Eventually(func() string {
				m, _ := infoAt(ctx, pod.Status.PodIP, pw, "persistence", 2*time.Second)
				return m["aof_last_write_status"]
			}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Equal("ok"), "the server writes its AOF again")
		})
	})

	It("a primary and its replica killed together, then both back", func() {
		underFault(cluster, "kill-primary-and-replica", func() {
			replica, primary := replicaAndPrimary(cluster)
			killTogether(replica, primary)
		})
	})

	It("a primary killed while its replica full-syncs after its claim was deleted", func() {
		underFault(cluster, "kill-during-full-sync", func() {
			replica, primary := replicaAndPrimary(cluster)
			pw := password(cluster)
			loadShard(primary, pw, 50000)
			// 0.2 ms per key saved: the replica's full sync of 50,000 keys takes about 10 s.
			vc := nodeClient(primary, pw)
			Expect(vc.Do(ctx, vc.B().Arbitrary("CONFIG", "SET", "rdb-key-save-delay", "200").Build()).Error()).To(Succeed())
			vc.Close()
			deleteClaimAndPod(replica)
			Eventually(func() string {
				n := nodeByName(cluster, replica.Name)
				m, _ := infoAt(ctx, n.Status.Workload.PodIP, pw, "replication", 2*time.Second)
				return m["master_sync_in_progress"]
			}).WithTimeout(2*time.Minute).WithPolling(200*time.Millisecond).Should(Equal("1"), "the new replica full-syncs")
			killServer(primary)
		})
	})

	It("the topology controller's partition count changed 8 → 16 while the cluster rolls: never two approvals at once", func() {
		rec := recordNamespaceApprovals(cluster.Namespace)
		underFault(cluster, "partitions-8-to-16", func() {
			DeferCleanup(setTopologyArg, "--partitions=", "8")
			startRoll(cluster, "20003")
			setTopologyArg("--partitions=", "16")
		})
		expectRolled(cluster)
		approved, most := rec.stop()
		GinkgoWriter.Printf("partitions 8 → 16: %d approvals, most at once %d\n", approved[cluster.Name], most[cluster.Name])
		Expect(most[cluster.Name]).To(BeNumerically("<=", 1), "never two nodes approved at once")
		Expect(approved[cluster.Name]).To(BeNumerically(">=", 6), "every node rolled")
	})

	It("the Kubernetes node of a primary lost for good, then the documented recovery", func() {
		underFault(cluster, "node-lost-recovered", func() {
			primary, host := primaryOnStoppableNode(cluster)
			DeferCleanup(startKubeNode, host)
			lost := byHost(cluster)[host]
			out, err := localCluster("stop-node", fmt.Sprint(kubeNodeIndex(host)))
			Expect(err).NotTo(HaveOccurred(), out)
			expectPromotedPartner(cluster, primary)
			Eventually(func() string { return conditionOf(cluster, valkeyv1.ConditionDegraded) }).
				WithTimeout(3*time.Minute).WithPolling(time.Second).Should(HavePrefix("True "+valkeyv1.ReasonNodesLost), "Degraded while %s is lost", host)
			GinkgoWriter.Printf("%s lost with %d nodes; Degraded: %s\n", host, len(lost), conditionOf(cluster, valkeyv1.ConditionDegraded))
			By("the documented recovery: each lost node's claim deleted and its pod force-deleted")
			for _, n := range lost {
				recoverLostNode(n)
			}
		})
	})
})

// killTogether kills the servers of nodes at once (SIGKILL, as killServer) and waits until
// each container has restarted and is Ready.
func killTogether(nodes ...valkeyv1.ValkeyNode) {
	var wg sync.WaitGroup
	for _, n := range nodes {
		wg.Add(1)
		go func() {
			defer GinkgoRecover()
			defer wg.Done()
			killServer(n)
		}()
	}
	wg.Wait()
}

// loadShard writes n keys of about 1 KiB into the primary's own slots (a single client: keys
// of other slots are refused with MOVED and skipped), so that a full sync takes a while.
func loadShard(primary valkeyv1.ValkeyNode, pw string, n int) {
	vc := nodeClient(primary, pw)
	defer vc.Close()
	value := strings.Repeat("v", 1024)
	stored := 0
	for start := 0; stored < n; start += 1000 {
		cmds := make(valkey.Commands, 0, 1000)
		for i := start; i < start+1000; i++ {
			cmds = append(cmds, vc.B().Set().Key(fmt.Sprintf("load-%d", i)).Value(value).Build())
		}
		for _, r := range vc.DoMulti(ctx, cmds...) {
			if r.Error() == nil {
				stored++
			}
		}
	}
	GinkgoWriter.Printf("%d keys of 1 KiB written to %s\n", stored, primary.Name)
}

// recoverLostNode follows docs/operations.md for a node whose Kubernetes node is gone for
// good: delete its claim (bound to that node's local volume), force-delete its pod; a new
// claim and pod are made elsewhere and it rejoins as a replica.
func recoverLostNode(n valkeyv1.ValkeyNode) {
	out, err := kubectl("-n", n.Namespace, "delete", "pvc", valkeyv1.ClaimName(n.Name), "--wait=false")
	ExpectWithOffset(1, err).NotTo(HaveOccurred(), out)
	pod := getPod(n)
	out, err = kubectl("-n", n.Namespace, "delete", "pod", pod.Name, "--grace-period=0", "--force", "--wait=false")
	ExpectWithOffset(1, err).NotTo(HaveOccurred(), out)
	waitReplaced(n, pod.UID)
}

// reportNode prints the node's conditions (what a user sees during a fault).
func reportNode(c *valkeyv1.ValkeyCluster, name, when string) {
	n := nodeByName(c, name)
	for _, cond := range n.Status.Conditions {
		GinkgoWriter.Printf("%s %s: %s=%s %s: %s\n", name, when, cond.Type, cond.Status, cond.Reason, cond.Message)
	}
}

// setTopologyArg sets the topology controller's argument with prefix (e.g. "--partitions=") to
// value and waits until the rollout is over: every pod runs it and is Ready.
func setTopologyArg(prefix, value string) {
	key := client.ObjectKey{Namespace: operatorNamespace, Name: "valkey-topology-controller"}
	EventuallyWithOffset(1, func() error {
		var d appsv1.Deployment
		if err := k8s.Get(ctx, key, &d); err != nil {
			return err
		}
		args := d.Spec.Template.Spec.Containers[0].Args
		found := false
		for i, a := range args {
			if strings.HasPrefix(a, prefix) {
				args[i], found = prefix+value, true
			}
		}
		if !found {
			args = append(args, prefix+value)
		}
		d.Spec.Template.Spec.Containers[0].Args = args
		return k8s.Update(ctx, &d)
	}).Should(Succeed())
	out, err := kubectl("-n", operatorNamespace, "rollout", "status", "deployment/valkey-topology-controller", "--timeout=4m")
	ExpectWithOffset(1, err).NotTo(HaveOccurred(), out)
	GinkgoWriter.Printf("topology controller runs with %s%s\n", prefix, value)
}
