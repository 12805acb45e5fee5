package e2e

import (
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/valkey-io/valkey-go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// The chaos suite (`make e2e-chaos`, label "chaos"): one persistent cluster goes through one
// fault after another under a writer that counts a key only once a replica has it (WAIT 1).
// After each fault: 0 acknowledged keys lost, `valkey-cli --cluster check` clean, the
// ValkeyCluster Ready again. Each spec reports acknowledged and lost keys and the time from
// the fault to Ready. A failed spec does not stop the next one: every fault is tried.
var _ = Describe("Faults under acknowledged writes", Label("chaos"), Ordered, ContinueOnFailure, func() {
	var (
		ns      string
		cluster *valkeyv1.ValkeyCluster
	)

	BeforeAll(func() {
		ns = newNamespace("e2e-chaos")
		cluster = newCluster(ns, "chaos", 2, 1, persistence("1Gi", expandableClass, valkeyv1.ReclaimRetain))
		waitReady(cluster, 6*time.Minute)
		expectClusterOK(cluster)
	})

	It("a replica's server killed with -9", func() {
		underFault(cluster, "kill-replica", func() {
			replica, _ := replicaAndPrimary(cluster)
			killServer(replica)
		})
	})

	It("a primary's server killed with -9", func() {
		underFault(cluster, "kill-primary", func() {
			_, primary := replicaAndPrimary(cluster)
			killServer(primary)
		})
	})

	It("a primary pod deleted with --grace-period=0 --force", func() {
		underFault(cluster, "force-delete-primary", func() {
			_, primary := replicaAndPrimary(cluster)
			deletePod(primary, "--grace-period=0", "--force")
		})
	})

	It("a primary pod deleted normally", func() {
		underFault(cluster, "delete-primary", func() {
			_, primary := replicaAndPrimary(cluster)
			deletePod(primary)
		})
	})

	It("every controller's pod killed during a roll", func() {
		underFault(cluster, "controllers-roll", func() {
			startRoll(cluster, "20001")
			killControllers()
		})
		expectRolled(cluster)
	})

	It("the API server restarted during a roll", func() {
		underFault(cluster, "apiserver-roll", func() {
			startRoll(cluster, "20002")
			restartAPIServer()
		})
		expectRolled(cluster)
	})

	It("every controller's pod killed during a scale-out migration", func() {
		underFault(cluster, "controllers-scale-out", func() {
			since := time.Now()
			updateCluster(cluster, func(c *valkeyv1.ValkeyCluster) { c.Spec.Shards = 3 })
			Eventually(func() bool { return clusterEvent(cluster, valkeyv1.EventMigrating, since) }).
				WithTimeout(5*time.Minute).WithPolling(200*time.Millisecond).Should(BeTrue(), "slots start moving")
			GinkgoWriter.Printf("controllers killed after the first Migrating event; Migrated already: %v\n",
				clusterEvent(cluster, valkeyv1.EventMigrated, since))
			killControllers()
		})
		Expect(clusterNodes(cluster)).To(HaveLen(6))
	})

	It("key by key (--migration-mode=keys, as with Valkey 8): the new primary killed during a scale-out's first batch", func() {
		underFault(cluster, "keys-scale-out-kill-target", func() {
			DeferCleanup(setTopologyArg, "--migration-mode=", "auto")
			setTopologyArg("--migration-mode=", "keys")
			since := time.Now()
			shards := getCluster(cluster).Spec.Shards
			updateCluster(cluster, func(c *valkeyv1.ValkeyCluster) { c.Spec.Shards = shards + 1 })
			Eventually(func() bool { return clusterEvent(cluster, valkeyv1.EventMigrating, since) }).
				WithTimeout(5*time.Minute).WithPolling(100*time.Millisecond).Should(BeTrue(), "keys start moving")
			target := nodeByName(cluster, valkeyv1.NodeName(cluster.Name, shards, 0))
			for _, n := range clusterNodes(cluster) {
				if n.Spec.Shard == shards && n.Status.Topology != nil && n.Status.Topology.Role == valkeyv1.RolePrimary {
					target = n
				}
			}
			GinkgoWriter.Printf("killing %s, the new shard's primary, after the first Migrating event\n", target.Name)
			killServer(target)
		})
		Expect(clusterNodes(cluster)).To(HaveLen(int(getCluster(cluster).Spec.Shards) * 2))
	})

	It("every controller's pod killed during a resize", func() {
		uids := podUIDs(cluster)
		underFault(cluster, "controllers-resize", func() {
			updateCluster(cluster, func(c *valkeyv1.ValkeyCluster) { c.Spec.Persistence.Size = resource.MustParse("2Gi") })
			Eventually(func() bool { return claimsRequesting(cluster, "2Gi") > 0 }).
				WithTimeout(2*time.Minute).WithPolling(200*time.Millisecond).Should(BeTrue(), "the first claim is being grown")
			killControllers()
			expectGrown(cluster, "2Gi")
		})
		Expect(podUIDs(cluster)).To(Equal(uids), "a resize restarts no pod")
	})

	It("a primary's claim deleted by hand", func() {
		underFault(cluster, "claim-deleted", func() {
			_, primary := replicaAndPrimary(cluster)
			deleteClaimAndPod(primary)
		})
	})

	It("the cluster deleted and created again under the same name while the topology controller is stopped", func() {
		underFault(cluster, "recreate", func() {
			spec := getCluster(cluster).Spec
			replicas := topologyReplicas()
			DeferCleanup(scaleTopology, replicas) // also when a step below fails
			scaleTopology(0)
			Expect(k8s.Delete(ctx, getCluster(cluster), client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())
			Eventually(func() error {
				return k8s.Get(ctx, client.ObjectKeyFromObject(cluster), &valkeyv1.ValkeyCluster{})
			}).WithTimeout(time.Minute).Should(MatchError(ContainSubstring("not found")), "the ValkeyCluster is gone")
			cluster = &valkeyv1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: cluster.Name, Namespace: ns}, Spec: spec}
			Expect(k8s.Create(ctx, cluster)).To(Succeed())
			scaleTopology(replicas)
		})
	})
})

// The figures of every fault, together after the suite.
var _ = ReportAfterSuite("chaos figures", func(r Report) {
	for _, s := range r.SpecReports {
		for _, e := range s.ReportEntries {
			if strings.HasPrefix(e.Name, "chaos ") {
				GinkgoWriter.Printf("%-28s %-6s %s\n", strings.TrimPrefix(e.Name, "chaos "), s.State, e.Value)
			}
		}
	}
})

// underFault runs fault under an acknowledged writer (prefix name), waits until the cluster is
// Ready again, reports acknowledged and lost keys and the time to Ready, and checks them.
func underFault(c *valkeyv1.ValkeyCluster, name string, fault func()) {
	w := startAckWriter(c, name)
	Eventually(w.count).WithTimeout(time.Minute).Should(BeNumerically(">", 200), "the writer is under way")
	since := time.Now()
	faultErr := InterceptGomegaFailure(fault)
	readyErr := faultErr
	if faultErr == nil {
		readyErr = InterceptGomegaFailure(func() { waitReady(c, 5*time.Minute) })
	}
	ready := time.Since(since).Round(time.Second)
	gap := w.longestGap(since).Round(100 * time.Millisecond)
	acked, refused := w.stop()
	lost, unreadable := lostKeys(c, name, acked)
	line := fmt.Sprintf("acked=%d lost=%d unreadable=%d longest-gap=%s ready=%v after %s refused=%v", len(acked), lost, unreadable, gap, readyErr == nil, ready, refused)
	GinkgoWriter.Printf("chaos %s: %s\n", name, line)
	AddReportEntry("chaos "+name, line)
	Expect(faultErr).NotTo(HaveOccurred(), "the fault")
	Expect(readyErr).NotTo(HaveOccurred(), "Ready again")
	Expect(lost+unreadable).To(BeZero(), "acknowledged keys lost out of %d", len(acked))
	expectClusterOK(c)
	expectClusterCheck(c)
}

// lostKeys reads every acknowledged key back: lost are missing or wrong, unreadable are those
// whose read failed (all of them when the cluster cannot be reached).
func lostKeys(c *valkeyv1.ValkeyCluster, prefix string, ids []int) (lost, unreadable int) {
	var vc valkey.Client
	if err := InterceptGomegaFailure(func() { vc = clusterClient(c) }); err != nil {
		GinkgoWriter.Printf("cannot read the keys back: %v\n", err)
		return 0, len(ids)
	}
	defer vc.Close()
	for start := 0; start < len(ids); start += 500 {
		batch := ids[start:min(start+500, len(ids))]
		cmds := make(valkey.Commands, 0, len(batch))
		for _, i := range batch {
			cmds = append(cmds, vc.B().Get().Key(fmt.Sprintf("%s-%d", prefix, i)).Build())
		}
		for j, r := range vc.DoMulti(ctx, cmds...) {
			v, err := r.ToString()
			switch {
			case valkey.IsValkeyNil(err):
				lost++
			case err != nil:
				unreadable++
			case v != fmt.Sprint(batch[j]) && !strings.HasPrefix(v, fmt.Sprint(batch[j])+":"):
				lost++
			}
		}
	}
	return lost, unreadable
}

// startRoll changes a config key that needs a restart (a roll of every pod) and waits until
// the first node is approved.
func startRoll(c *valkeyv1.ValkeyCluster, value string) {
	since := metav1.NewTime(time.Now().Truncate(time.Second))
	updateCluster(c, func(c *valkeyv1.ValkeyCluster) {
		c.Spec.Config = map[string]string{"hash-max-listpack-entries": value}
	})
	EventuallyWithOffset(1, func() bool {
		for _, n := range clusterNodes(c) {
			cond := status.Get(n.Status.Conditions, valkeyv1.ConditionRollApproved)
			if cond != nil && cond.Status == metav1.ConditionTrue && !cond.LastTransitionTime.Before(&since) {
				return true
			}
		}
		return false
	}).WithTimeout(3*time.Minute).WithPolling(200*time.Millisecond).Should(BeTrue(), "a node approved for the roll")
}

// expectRolled checks that every node runs the template it should.
func expectRolled(c *valkeyv1.ValkeyCluster) {
	for _, n := range clusterNodes(c) {
		ExpectWithOffset(1, n.Status.Workload.TemplateHash).To(Equal(n.Status.Workload.DesiredTemplateHash), "%s rolled", n.Name)
	}
}

// claimsRequesting counts the cluster's claims that request size.
func claimsRequesting(c *valkeyv1.ValkeyCluster, size string) int {
	want := resource.MustParse(size)
	return countClaims(c, func(pvc *corev1.PersistentVolumeClaim) bool {
		req := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
		return req.Cmp(want) == 0
	})
}

// countClaims counts the cluster's claims (those that exist) for which ok holds.
func countClaims(c *valkeyv1.ValkeyCluster, ok func(*corev1.PersistentVolumeClaim) bool) int {
	count := 0
	for _, n := range clusterNodes(c) {
		var pvc corev1.PersistentVolumeClaim
		if k8s.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: valkeyv1.ClaimName(n.Name)}, &pvc) == nil && ok(&pvc) {
			count++
		}
	}
	return count
}

// expectGrown waits until every claim has size and reports VolumeSized, and each pod's
// filesystem has grown.
func expectGrown(c *valkeyv1.ValkeyCluster, size string) {
	want := resource.MustParse(size)
	EventuallyWithOffset(1, func(g Gomega) {
		for _, n := range clusterNodes(c) {
			var pvc corev1.PersistentVolumeClaim
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: valkeyv1.ClaimName(n.Name)}, &pvc)).To(Succeed())
			capacity := pvc.Status.Capacity[corev1.ResourceStorage]
			g.Expect(capacity.Cmp(want)).To(BeNumerically(">=", 0), "capacity of %s", pvc.Name)
			g.Expect(status.IsCurrentTrue(&n, n.Status.Conditions, valkeyv1.ConditionVolumeSized)).To(BeTrue(), "%s VolumeSized", n.Name)
			g.Expect(dfSize(c.Namespace, n.Status.Workload.PodName)).To(BeNumerically(">", want.Value()*9/10), "filesystem in %s", n.Status.Workload.PodName)
		}
	}).WithTimeout(4 * time.Minute).WithPolling(3 * time.Second).Should(Succeed())
}
