package sharding_test

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// A rollout that changes --partitions runs pods of both counts for a while. Their Leases do
// not exclude each other (a cluster in p03 of 8 is in p03 or p11 of 16), so a replica takes
// no partition while one of another count is alive (docs/contract.md, "Partitions").
var _ = Describe("Topology managers with different partition counts", func() {
	var (
		rec     *recorder
		leaseNS string
		keys    []string
	)

	BeforeEach(func() {
		rec, keys = newRecorder(), nil
		leaseNS = newNamespace("valkey-system-")
		ns := newNamespace("counts-")
		for i := range clusters {
			keys = append(keys, createCluster(ns, fmt.Sprintf("c%02d", i)))
		}
	})

	It("leave the clusters to the replica of the old count until it is gone, then take them all", func() {
		old := startManagerWith(rec, leaseNS, "old-8", 8)
		DeferCleanup(old.stop)
		Eventually(func() []string { return rec.Clusters("old-8") }).Should(ContainElements(keys))

		By("a replica with 16 partitions starts while the one with 8 runs: it reconciles nothing")
		newer := startManagerWith(rec, leaseNS, "new-16", 16)
		DeferCleanup(newer.stop)
		Eventually(memberHolders(leaseNS)).Should(ContainElement("new-16"))
		Consistently(func() []string { return rec.Clusters("new-16") }).
			WithTimeout(leaseDuration + retryPeriod).Should(BeEmpty())
		Expect(partitionsOf(leaseNS, "new-16")).To(BeEmpty())
		Expect(rec.Clusters("old-8")).To(ContainElements(keys), "the old replica still works")

		By("the replica with 8 stops as a crash does: the one with 16 takes every partition once its Leases expire")
		old.stop()
		Eventually(func() []string { return rec.Clusters("new-16") }).WithTimeout(leaseDuration * 4).Should(ContainElements(keys))
		Eventually(leaseHolders(leaseNS)).Should(SatisfyAll(HaveLen(16), HaveEach("new-16")))
		Expect(rec.Overlaps()).To(BeEmpty())
	})

	It("started together with different counts, never both act, and the survivor takes over", func() {
		a := startManagerWith(rec, leaseNS, "a-8", 8)
		b := startManagerWith(rec, leaseNS, "b-16", 16)
		DeferCleanup(a.stop)
		DeferCleanup(b.stop)
		Eventually(memberHolders(leaseNS)).Should(ContainElements("a-8", "b-16"))
		Consistently(func() bool { return len(rec.Clusters("a-8")) == 0 || len(rec.Clusters("b-16")) == 0 }).
			WithTimeout(leaseDuration+retryPeriod).Should(BeTrue(), "one of them at most reconciles")

		By("b-16 goes: a-8 reconciles every cluster")
		b.stop()
		Eventually(func() []string { return rec.Clusters("a-8") }).WithTimeout(leaseDuration * 4).Should(ContainElements(keys))
		Expect(rec.Overlaps()).To(BeEmpty())
	})
})
