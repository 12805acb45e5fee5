package topologycontroller_test

import (
	"context"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// reportWorkload writes a held node's workload status as the workload controller would:
// WorkloadReady, RollPending (TemplateChanged when pending) and the pod IP of its server.
func reportWorkload(f *fakeWorkload, ns, name string, ready, rollPending bool) {
	reportWorkloadAt(ns, name, f.server(name).Host, ready, rollPending)
}

// reportWorkloadAt is reportWorkload with the given pod IP.
func reportWorkloadAt(ns, name, podIP string, ready, rollPending bool) {
	n := getNode(ns, name)
	ready1 := status.Condition(valkeyv1.ConditionWorkloadReady, ready, valkeyv1.ReasonReady, "")
	if !ready {
		ready1 = status.Condition(valkeyv1.ConditionWorkloadReady, false, valkeyv1.ReasonPodNotReady, "readiness probe failed")
	}
	roll := status.Condition(valkeyv1.ConditionRollPending, false, valkeyv1.ReasonUpToDate, "")
	if rollPending {
		roll = status.Condition(valkeyv1.ConditionRollPending, true, valkeyv1.ReasonTemplateChanged, "waiting for RollApproved")
	}
	a := status.Applier{Client: k8s, FieldManager: valkeyv1.FieldManagerWorkload}
	ExpectWithOffset(2, a.ApplyNode(context.Background(), n, status.WorkloadShare{
		Conditions: []metav1.Condition{ready1, roll},
		Workload: &valkeyv1.WorkloadStatus{
			Kind: "StatefulSet", Name: valkeyv1.WorkloadName(name), PodName: valkeyv1.WorkloadName(name) + "-0", PodIP: podIP,
		},
	})).To(Succeed())
}

func rollApproved(ns, name string) *metav1.Condition {
	return status.Get(getNode(ns, name).Status.Conditions, valkeyv1.ConditionRollApproved)
}

// failoverCalls is how many CLUSTER FAILOVER commands the server at addr has received.
func failoverCalls(addr, pw string) int {
	out, err := cmd(addr, pw, "INFO", "commandstats")
	Expect(err).NotTo(HaveOccurred())
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "cmdstat_cluster|failover:calls="); ok {
			n, _ := strconv.Atoi(strings.Split(v, ",")[0])
			return n
		}
	}
	return 0
}

var _ = Describe("Roll safety", func() {

	// formHeld forms a 1 × 1 cluster, then holds both nodes (the test plays their workload
	// controller) and returns the primary's and the replica's names.
	formHeld := func(ns, name string) (f *fakeWorkload, pw, primary, replica string) {
		f, pw = formCluster(ns, name, 1, 1)
		primary, replica = valkeyv1.NodeName(name, 0, 0), valkeyv1.NodeName(name, 0, 1)
		if getNode(ns, primary).Status.Topology.Role != valkeyv1.RolePrimary {
			primary, replica = replica, primary
		}
		f.hold(true, primary, replica)
		return f, pw, primary, replica
	}

	// approvedAfterFailover waits until the primary's roll is approved and checks that it was
	// failed over first: its server is a replica now. what names the primary in the log.
	approvedAfterFailover := func(f *fakeWorkload, ns, primary, what string) {
		EventuallyWithOffset(1, func(g Gomega) {
			c := rollApproved(ns, primary)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "%+v", c)
		}, 60*time.Second).Should(Succeed())
		c := rollApproved(ns, primary)
		role := serverRole(f.server(primary).Addr(), getNode(ns, primary))
		GinkgoWriter.Printf("approval of the %s: %s %q, its server's role: %s\n", what, c.Reason, c.Message, role)
		ExpectWithOffset(1, role).To(Equal("slave"), "a primary that owns slots was approved without a failover")
		ExpectWithOffset(1, c.Reason).To(Equal(valkeyv1.ReasonFailedOver))
	}

	It("fails a primary whose pod is not ready over before its roll, since it may still serve", func() {
		ns := newNamespace()
		f, pw, primary, replica := formHeld(ns, "nr")
		writeKeys(f, pw, 500)

		By("reporting the primary's pod not ready (its server still serves) with a roll pending")
		reportWorkload(f, ns, replica, true, false)
		reportWorkload(f, ns, primary, false, true)
		approvedAfterFailover(f, ns, primary, "not-ready primary")
		Expect(readKeys(f, pw, 500)).To(Equal(500))
	})

	It("fails over a not-ready primary the controller cannot reach while the cluster still knows it owning slots", func() {
		ns := newNamespace()
		f, pw, primary, replica := formHeld(ns, "nra")
		writeKeys(f, pw, 500)

		By("reporting the primary's pod not ready at an address where nothing answers; its server runs on")
		reportWorkload(f, ns, replica, true, false)
		reportWorkloadAt(ns, primary, newPodIP(), false, true)
		approvedAfterFailover(f, ns, primary, "unreachable not-ready primary")
		Expect(readKeys(f, pw, 500)).To(Equal(500))
	})

	It("does not carry a roll approval over to a later generation", func() {
		ns := newNamespace()
		f, _, primary, replica := formHeld(ns, "gen")

		By("approving the replica's roll at the current generation")
		reportWorkload(f, ns, primary, true, false)
		reportWorkload(f, ns, replica, true, true)
		Eventually(func(g Gomega) {
			n := getNode(ns, replica)
			g.Expect(status.IsCurrentTrue(n, n.Status.Conditions, valkeyv1.ConditionRollApproved)).To(BeTrue())
		}, 60*time.Second).Should(Succeed())
		approvedAt := getNode(ns, replica).Generation

		By("changing the spec before the workload acted, while the primary's pod is not ready")
		patchSpec(ns, "gen", `{"image":"valkey/valkey:9.1.3"}`)
		Eventually(func() int64 { return getNode(ns, replica).Generation }, 20*time.Second).Should(BeNumerically(">", approvedAt))
		Eventually(func() int64 { return getNode(ns, primary).Generation }, 20*time.Second).Should(BeNumerically(">", approvedAt))
		reportWorkload(f, ns, primary, false, false)
		reportWorkload(f, ns, replica, true, true)
		Consistently(func(g Gomega) {
			n := getNode(ns, replica)
			g.Expect(status.IsCurrentTrue(n, n.Status.Conditions, valkeyv1.ConditionRollApproved)).To(BeFalse(),
				"the approval of generation %d holds at generation %d: %+v", approvedAt, n.Generation, rollApproved(ns, replica))
		}, 5*time.Second).Should(Succeed())
		c := rollApproved(ns, replica)
		GinkgoWriter.Printf("replica's approval after the spec change: %s %s %q\n", c.Status, c.Reason, c.Message)
		Eventually(func() int { return eventsWithReason(ns, valkeyv1.EventRollApprovalWithdrawn) }, 10*time.Second).Should(BeNumerically(">=", 1))

		By("the primary's pod is ready again: the replica's roll is decided again and approved")
		reportWorkload(f, ns, primary, true, false)
		Eventually(func(g Gomega) {
			n := getNode(ns, replica)
			g.Expect(status.IsCurrentTrue(n, n.Status.Conditions, valkeyv1.ConditionRollApproved)).To(BeTrue())
		}, 60*time.Second).Should(Succeed())
	})

	It("withdraws a replica's roll approval when it becomes a primary before it restarts", func() {
		ns := newNamespace()
		f, pw, primary, replica := formHeld(ns, "role")
		reportWorkload(f, ns, primary, true, false)
		reportWorkload(f, ns, replica, true, true)
		Eventually(func(g Gomega) {
			c := rollApproved(ns, replica)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Reason).To(Equal(valkeyv1.ReasonApproved))
		}, 60*time.Second).Should(Succeed())

		By("promoting the approved replica, as Valkey's own failover would")
		addr := f.server(replica).Addr()
		Expect(cmd(addr, pw, "CLUSTER", "FAILOVER")).To(Equal("OK"))
		Eventually(func() string { return serverRole(addr, getNode(ns, replica)) }, 20*time.Second).Should(Equal("master"))
		Eventually(func(g Gomega) {
			c := rollApproved(ns, replica)
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse), "approved as a replica, it is a primary now: %+v", c)
		}, 20*time.Second).Should(Succeed())

		By("the new primary is failed over before it is approved again")
		Eventually(func(g Gomega) {
			c := rollApproved(ns, replica)
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Reason).To(Equal(valkeyv1.ReasonFailedOver))
		}, 60*time.Second).Should(Succeed())
		Expect(serverRole(addr, getNode(ns, replica))).To(Equal("slave"))
	})
})

var _ = Describe("A failover that does not complete", func() {

	It("backs off, says so, and does not hold a reconcile while it waits", func() {
		opts := testOptions
		opts.FailoverTimeout = 3 * time.Second
		opts.FailoverBackoff = 2 * time.Second
		opts.FailoverBackoffMax = time.Minute
		runWith(opts)
		ns := newNamespace()
		f, pw := formCluster(ns, "fo", 1, 1)
		writeKeys(f, pw, 500)
		primary, replica := valkeyv1.NodeName("fo", 0, 0), valkeyv1.NodeName("fo", 0, 1)
		Expect(getNode(ns, primary).Status.Topology.Role).To(Equal(valkeyv1.RolePrimary))

		By("stalling the replica's replication: its link stays up, but it never catches up to take over")
		raddr := f.server(replica).Addr()
		Expect(cmd(raddr, pw, "CLIENT", "PAUSE", "600000", "WRITE")).To(Equal("OK"))
		DeferCleanup(func() { _, _ = cmd(raddr, pw, "CLIENT", "UNPAUSE") })
		writeKeys(f, pw, 600) // the primary is ahead of the replica now

		By("deleting the primary: the drain fails it over")
		Eventually(func() error { return k8s.Update(context.Background(), getNodeWithFinalizer(ns, primary)) }).Should(Succeed())
		Expect(k8s.Delete(context.Background(), getNode(ns, primary))).To(Succeed())
		Eventually(func() int { return failoverCalls(raddr, pw) }, 30*time.Second).Should(Equal(1))
		first := time.Now()

		By("changing the spec while the failover runs: the cluster's status follows at once")
		patchSpec(ns, "fo", `{"resources":{"requests":{"cpu":"100m"}}}`)
		gen := getCluster(ns, "fo").Generation
		Eventually(func() int64 { return getCluster(ns, "fo").Status.ObservedGeneration }, 3*time.Second).Should(Equal(gen),
			"no reconcile of the cluster while a failover runs")

		By("tries back off")
		Eventually(func(g Gomega) {
			c := status.Get(getCluster(ns, "fo").Status.Conditions, valkeyv1.ConditionProgressing)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(valkeyv1.ReasonFailoverBackoff), "%+v", c)
			g.Expect(c.Message).To(ContainSubstring(primary))
		}, 20*time.Second).Should(Succeed())
		Eventually(func() int { return eventsWithReason(ns, valkeyv1.EventFailoverStalled) }, 10*time.Second).Should(BeNumerically(">=", 1))
		// 3 s per try, then 2 s, 4 s, 8 s apart: tries at 0, 5, 12 s in the first 20 s;
		// without backoff one every 3.5 s or so (six).
		Consistently(func() int { return failoverCalls(raddr, pw) }, time.Until(first.Add(20*time.Second)), 500*time.Millisecond).
			Should(BeNumerically("<=", 3), "failover tried again without backing off")
		GinkgoWriter.Printf("CLUSTER FAILOVER tries in the first 20 s: %d\n", failoverCalls(raddr, pw))

		By("the replica catches up: the next try completes and the node drains")
		Expect(cmd(raddr, pw, "CLIENT", "UNPAUSE")).To(Equal("OK"))
		Eventually(func() string { return serverRole(raddr, getNode(ns, replica)) }, 90*time.Second).Should(Equal("master"))
		Eventually(func() error { return checkHealthy(f, pw, 1, 1) }, 2*time.Minute).Should(Succeed())
		Eventually(clusterReady(ns, "fo"), 60*time.Second).Should(Succeed())
		Expect(readKeys(f, pw, 600)).To(Equal(600))
		Eventually(func() string {
			return status.Get(getCluster(ns, "fo").Status.Conditions, valkeyv1.ConditionProgressing).Reason
		}, 30*time.Second).ShouldNot(Equal(valkeyv1.ReasonFailoverBackoff))
	})
})
