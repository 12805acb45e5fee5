package topologycontroller_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// reportVolume writes a node's VolumeReady (and VolumeSized) as the volume controller would.
func reportVolume(ns, name string, ready bool, reason string) {
	a := status.Applier{Client: k8s, FieldManager: valkeyv1.FieldManagerVolume}
	ExpectWithOffset(1, a.ApplyNode(context.Background(), getNode(ns, name), status.VolumeShare{Conditions: []metav1.Condition{
		status.Condition(valkeyv1.ConditionVolumeReady, ready, reason, "test plays the volume controller"),
		status.Condition(valkeyv1.ConditionVolumeSized, ready, reason, "test plays the volume controller"),
	}})).To(Succeed())
}

// reportNoPod writes a held node's workload status as the workload controller does when it
// does not create the workload before VolumeReady=True.
func reportNoPod(ns, name string) {
	a := status.Applier{Client: k8s, FieldManager: valkeyv1.FieldManagerWorkload}
	ExpectWithOffset(1, a.ApplyNode(context.Background(), getNode(ns, name), status.WorkloadShare{Conditions: []metav1.Condition{
		status.Condition(valkeyv1.ConditionWorkloadReady, false, valkeyv1.ReasonWaitingForVolume, "waiting for VolumeReady=True"),
		status.Condition(valkeyv1.ConditionRollPending, false, valkeyv1.ReasonUpToDate, "no workload yet"),
	}})).To(Succeed())
}

// shardNodes returns the names of shard's primary and replica of a cluster with one replica.
func shardNodes(ns, cluster string, shard int32) (primary, replica string) {
	primary, replica = valkeyv1.NodeName(cluster, shard, 0), valkeyv1.NodeName(cluster, shard, 1)
	if getNode(ns, primary).Status.Topology.Role != valkeyv1.RolePrimary {
		primary, replica = replica, primary
	}
	return primary, replica
}

func approvedNodes(f *fakeWorkload) map[string]string {
	_, approvals := f.stats()
	out := map[string]string{}
	for _, a := range approvals {
		out[a.node] = a.reason
	}
	return out
}

var _ = Describe("A node waiting for its volume", func() {

	It("holds only its own roll: its shard's primary fails over to it, the other shard rolls", func() {
		ns := newNamespace()
		f, pw := formCluster(ns, "vw", 2, 1)
		writeKeys(f, pw, 500)
		p0, stuck := shardNodes(ns, "vw", 0)
		p1, r1 := shardNodes(ns, "vw", 1)

		By("a replica whose new template waits for a claim of a class that does not exist")
		reportVolume(ns, stuck, false, valkeyv1.ReasonStorageClassNotFound)
		f.setWaitVolume(stuck, true)
		patchSpec(ns, "vw", `{"image":"valkey/valkey:9.1.3"}`)
		Eventually(func(g Gomega) {
			g.Expect(approvedNodes(f)).To(HaveLen(3))
			g.Expect(clusterReady(ns, "vw")()).To(Succeed())
		}, 3*time.Minute).Should(Succeed())
		got := approvedNodes(f)
		GinkgoWriter.Printf("approvals while %s waits for its claim: %v\n", stuck, got)
		Expect(got).To(Equal(map[string]string{
			r1: valkeyv1.ReasonApproved, p1: valkeyv1.ReasonFailedOver, p0: valkeyv1.ReasonFailedOver,
		}))
		Expect(serverRole(f.server(stuck).Addr(), getNode(ns, stuck))).To(Equal("master"), "the primary was failed over to the waiting replica")
		Expect(readKeys(f, pw, 500)).To(Equal(500))
		maxApproved, _ := f.stats()
		Expect(maxApproved).To(Equal(1))

		By("the class is corrected: the waiting node rolls last, failed over first")
		reportVolume(ns, stuck, true, valkeyv1.ReasonBound)
		f.setWaitVolume(stuck, false)
		Eventually(func(g Gomega) {
			g.Expect(approvedNodes(f)).To(HaveKeyWithValue(stuck, valkeyv1.ReasonFailedOver))
			g.Expect(clusterReady(ns, "vw")()).To(Succeed())
		}, 3*time.Minute).Should(Succeed())
		Expect(readKeys(f, pw, 500)).To(Equal(500))
	})

	It("without a pod holds nothing of the others; its durable primary restarts without a replica", func() {
		ns := newNamespace()
		f, pw := formCluster(ns, "np", 2, 1)
		writeKeys(f, pw, 500)
		p0, lacking := shardNodes(ns, "np", 0)
		p1, r1 := shardNodes(ns, "np", 1)

		By("a replica that has no pod because its claim conflicts with another's")
		f.hold(true, lacking)
		Expect(f.server(lacking).Kill()).To(Succeed())
		reportVolume(ns, lacking, false, valkeyv1.ReasonClaimConflict)
		reportNoPod(ns, lacking)

		By("its primary keeps its data in memory only: it is not restarted without a replica")
		addr := f.server(p0).Addr()
		Expect(cmd(addr, pw, "CONFIG", "SET", "save", "")).To(Equal("OK"))
		gen := getNode(ns, lacking).Generation
		patchSpec(ns, "np", `{"image":"valkey/valkey:9.1.3"}`)
		Eventually(func() int64 { return getNode(ns, lacking).Generation }, 20*time.Second).Should(BeNumerically(">", gen))
		reportVolume(ns, lacking, false, valkeyv1.ReasonClaimConflict)
		reportNoPod(ns, lacking) // the workload controller reports every generation
		Eventually(func(g Gomega) {
			c := rollApproved(ns, p0)
			g.Expect(approvedNodes(f)).To(HaveLen(2), "%s: %+v", p0, c)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(valkeyv1.ReasonWaitingForTurn))
			g.Expect(c.Message).To(ContainSubstring("in memory only"))
		}, 3*time.Minute).Should(Succeed())
		GinkgoWriter.Printf("%s: %s\n", p0, rollApproved(ns, p0).Message)
		Expect(approvedNodes(f)).To(Equal(map[string]string{r1: valkeyv1.ReasonApproved, p1: valkeyv1.ReasonFailedOver}))
		Consistently(func() map[string]string { return approvedNodes(f) }, 3*time.Second).ShouldNot(HaveKey(p0))

		By("with its snapshots on, it restarts on its data")
		Expect(cmd(addr, pw, "CONFIG", "SET", "save", "3600 1")).To(Equal("OK"))
		Eventually(func() map[string]string { return approvedNodes(f) }, 2*time.Minute).Should(HaveKeyWithValue(p0, valkeyv1.ReasonApprovedNoReplica))
		Expect(approvedNodes(f)).NotTo(HaveKey(lacking))
		Eventually(func() int { return readKeys(f, pw, 500) }, time.Minute).Should(Equal(500))
	})
})
