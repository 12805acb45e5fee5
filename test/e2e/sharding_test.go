package e2e

import (
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/partition"
)

var _ = Describe("The topology controller sharded across three replicas", Label("sharding"), func() {
	It("hands a killed replica's clusters over: every cluster Ready, never two approvals at once in a cluster", func() {
		Expect(topologyPods()).To(HaveLen(3), "deploy/local runs three topology controllers")
		// An earlier spec may have restarted a replica: its Leases name the old identity until
		// they expire and a running replica takes them.
		Eventually(heldByRunning).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed(),
			"every partition held by a running replica")
		ns := newNamespace("sharding")
		rec := recordNamespaceApprovals(ns)

		By("12 clusters created; the replica holding the most partitions is killed (SIGKILL) meanwhile")
		var clusters []*valkeyv1.ValkeyCluster
		for i := range 12 {
			replicas := int32(0)
			if i >= 8 {
				replicas = 1 // rolled below: a replica and a primary to approve in turn
			}
			clusters = append(clusters, newCluster(ns, fmt.Sprintf("c%02d", i), 1, replicas, nil))
		}
		victim, held := killBusiestReplica()
		killed := time.Now()
		lastRenewed := map[string]time.Time{}
		for _, l := range partitionLeases() {
			if ptr.Deref(l.Spec.HolderIdentity, "") == victim {
				lastRenewed[l.Name] = l.Spec.RenewTime.Time
			}
		}

		By("two clusters scaled to two shards while the partitions move")
		for _, c := range clusters[:2] {
			updateCluster(c, func(c *valkeyv1.ValkeyCluster) { c.Spec.Shards = 2 })
		}
		Eventually(func(g Gomega) {
			now := partitionHolders()
			for _, lease := range held {
				g.Expect(now[lease]).NotTo(Or(BeEmpty(), Equal(victim)), "%s handed over", lease)
			}
		}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
		// Each Lease expires a lease duration after another replica saw its last renewal
		// and is taken then, by it or, when it is at its share, by the killed replica's
		// restart once it has written the Lease free; a few rounds of slack for the loop's
		// calls on a loaded API server. The times are the replicas' own (one machine here).
		var gap time.Duration
		gaps := map[string]time.Duration{}
		for _, l := range partitionLeases() {
			if last, ok := lastRenewed[l.Name]; ok {
				gaps[l.Name] = l.Spec.AcquireTime.Sub(last).Round(100 * time.Millisecond)
				gap = max(gap, l.Spec.AcquireTime.Sub(last))
			}
		}
		GinkgoWriter.Printf("sharding: %s held %v; all taken over %s after their last renewal (%v), seen %s after the kill\n",
			victim, held, gap.Round(time.Second), gaps, time.Since(killed).Round(time.Second))
		Expect(gap).To(BeNumerically("<=", leaseDuration+3*retryPeriod), "taken within a lease duration and two rounds of its last renewal")
		for _, c := range clusters {
			waitReady(c, 4*time.Minute)
		}

		By("the clusters with a replica roll for a config change, one node at a time each")
		for _, c := range clusters[8:] {
			updateCluster(c, func(c *valkeyv1.ValkeyCluster) {
				c.Spec.Config = map[string]string{"hash-max-listpack-entries": "20000"}
			})
		}
		for _, c := range clusters[8:] {
			Eventually(func() int { return rec.approvedIn(c.Name) }).WithTimeout(3*time.Minute).WithPolling(time.Second).
				Should(BeNumerically(">=", 2), "%s: both nodes approved", c.Name)
			waitReady(c, 3*time.Minute)
		}
		approved, most := rec.stop()
		GinkgoWriter.Printf("sharding: approvals per cluster %v, most at once %v\n", approved, most)
		for _, c := range clusters {
			Expect(most[c.Name]).To(BeNumerically("<=", 1), "%s: never two nodes approved at once", c.Name)
		}
	})
})

// topologyPods are the running topology controller pods.
func topologyPods() []corev1.Pod {
	var list corev1.PodList
	ExpectWithOffset(1, k8s.List(ctx, &list, client.InNamespace(operatorNamespace),
		client.MatchingLabels{"app.kubernetes.io/component": "topology-controller"})).To(Succeed())
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp.IsZero() {
			out = append(out, p)
		}
	}
	return out
}

// partitionLeases are the topology controller's partition Leases.
func partitionLeases() []coordinationv1.Lease {
	var list coordinationv1.LeaseList
	ExpectWithOffset(1, k8s.List(ctx, &list, client.InNamespace(operatorNamespace),
		client.MatchingLabels{partition.LabelSet: "topology-controller", partition.LabelRole: partition.RolePartition})).To(Succeed())
	return list.Items
}

// partitionHolders maps each partition Lease of the topology controller to its holder.
func partitionHolders() map[string]string {
	out := map[string]string{}
	for _, l := range partitionLeases() {
		out[l.Name] = ptr.Deref(l.Spec.HolderIdentity, "")
	}
	return out
}

// The deployed partition timings (the binary's defaults).
const (
	leaseDuration = 15 * time.Second
	retryPeriod   = 2 * time.Second
)

// killBusiestReplica SIGKILLs the manager of the replica holding the most partitions (it
// releases nothing: its Leases must expire). The pod is read again on each try: a container
// restarted since the last read has another ID, which no containerd runs any more.
func killBusiestReplica() (victim string, held []string) {
	Eventually(func() error {
		v, pod, h, err := busiestReplica()
		if err != nil {
			return err
		}
		_, container := containerState(&pod, "manager")
		if out, err := localCluster("signal", container, "SIGKILL"); err != nil {
			return fmt.Errorf("signal %s: %w: %s", container, err, out)
		}
		victim, held = v, h
		return nil
	}).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())
	return victim, held
}

// busiestReplica is the topology controller replica holding the most partitions (its
// identity: its pod's name and a suffix), its pod, and its Leases.
func busiestReplica() (string, corev1.Pod, []string, error) {
	by := map[string][]string{}
	for lease, holder := range partitionHolders() {
		by[holder] = append(by[holder], lease)
	}
	best := ""
	for holder := range by {
		if holder != "" && len(by[holder]) > len(by[best]) {
			best = holder
		}
	}
	if pod, ok := runningReplica(topologyPods(), best); ok {
		return best, pod, by[best], nil
	}
	return "", corev1.Pod{}, nil, fmt.Errorf("no running topology controller pod is %q, the busiest holder: %v", best, by)
}

// runningReplica is the pod among pods whose replica identity is holder.
func runningReplica(pods []corev1.Pod, holder string) (corev1.Pod, bool) {
	for _, p := range pods {
		if holder != "" && strings.HasPrefix(holder, p.Name+"-") {
			return p, true
		}
	}
	return corev1.Pod{}, false
}

// heldByRunning fails while a partition is free or held by a replica that no longer runs.
func heldByRunning() error {
	pods := topologyPods()
	for lease, holder := range partitionHolders() {
		if _, ok := runningReplica(pods, holder); !ok {
			return fmt.Errorf("%s held by %q, not a running replica", lease, holder)
		}
	}
	return nil
}
