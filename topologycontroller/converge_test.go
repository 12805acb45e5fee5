package topologycontroller_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// workloadsReady fails until the namespace has want ValkeyNodes, each with WorkloadReady=True.
func workloadsReady(ns string, want int) func() error {
	return func() error {
		ready := 0
		for _, n := range listNodes(ns) {
			if status.IsTrue(n.Status.Conditions, valkeyv1.ConditionWorkloadReady) {
				ready++
			}
		}
		if ready != want {
			return fmt.Errorf("%d of %d workloads ready", ready, want)
		}
		return nil
	}
}

var _ = Describe("A forming cluster", func() {

	It("is Ready soon after its pods are, without waiting for a resync", func() {
		// A resync period far beyond the bound: only looking again while Valkey converges
		// (replicas syncing, gossip spreading the slots) gets the cluster Ready in time.
		opts := testOptions
		opts.ResyncPeriod = 5 * time.Minute
		runWith(opts)
		ns := newNamespace()
		f := startFakeWorkload(ns)
		DeferCleanup(f.stop)
		newCluster(ns, "c", 3, 1)
		pw := clusterPassword(ns, "c")

		Eventually(workloadsReady(ns, 6), formTimeout).Should(Succeed())
		start := time.Now()
		Eventually(clusterReady(ns, "c"), 30*time.Second).Should(Succeed())
		took := time.Since(start)
		AddReportEntry("pods ready to cluster Ready", took.Round(time.Millisecond).String())
		GinkgoWriter.Printf("cluster Ready %s after its pods\n", took)
		Expect(checkHealthy(f, pw, 3, 1)).To(Succeed())
	})
})
