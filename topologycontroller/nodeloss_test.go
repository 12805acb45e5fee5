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

// reportNodeLost writes a held node's workload status as the workload controller does when
// its pod's Kubernetes node is lost.
func reportNodeLost(ns, name, podIP, msg string) {
	a := status.Applier{Client: k8s, FieldManager: valkeyv1.FieldManagerWorkload}
	ExpectWithOffset(1, a.ApplyNode(context.Background(), getNode(ns, name), status.WorkloadShare{
		Conditions: []metav1.Condition{
			status.Condition(valkeyv1.ConditionWorkloadReady, false, valkeyv1.ReasonNodeNotReady, msg),
			status.Condition(valkeyv1.ConditionRollPending, false, valkeyv1.ReasonUpToDate, ""),
		},
		Workload: &valkeyv1.WorkloadStatus{
			Kind: "StatefulSet", Name: valkeyv1.WorkloadName(name), PodName: valkeyv1.WorkloadName(name) + "-0", PodIP: podIP,
		},
	})).To(Succeed())
}

// clusterCondition is a ValkeyCluster condition as "Status/Reason".
func clusterCondition(ns, name, condType string) func() string {
	return func() string {
		if c := status.Get(getCluster(ns, name).Status.Conditions, condType); c != nil {
			return string(c.Status) + "/" + c.Reason
		}
		return ""
	}
}

var _ = Describe("A lost Kubernetes node", func() {

	It("makes the cluster Degraded, NodesLost, and Ready on the survivors once its replica took over; it clears when the node returns", func() {
		ns := newNamespace()
		f, pw := formCluster(ns, "lost", 3, 1)
		writeKeys(f, pw, 300)
		primary, survivor := valkeyv1.NodeName("lost", 0, 0), valkeyv1.NodeName("lost", 0, 1)
		if getNode(ns, primary).Status.Topology.Role != valkeyv1.RolePrimary {
			primary, survivor = survivor, primary
		}

		By("the Kubernetes node of shard 0's primary stops: its server is gone, its ValkeyNode says NodeNotReady")
		f.hold(true, primary)
		srv := f.server(primary)
		Expect(srv.Kill()).To(Succeed())
		lostMsg := "pod " + valkeyv1.WorkloadName(primary) + "-0 is on Kubernetes node k8s-2, which is Unknown since 2026-11-30T12:00:00Z"
		reportNodeLost(ns, primary, srv.Host, lostMsg)

		Eventually(clusterCondition(ns, "lost", valkeyv1.ConditionDegraded), 60*time.Second).Should(Equal("True/NodesLost"))
		Eventually(clusterReady(ns, "lost"), 60*time.Second).Should(Succeed())
		vc := getCluster(ns, "lost")
		// The survivor that took over has no replica left: one more fault loses its slots.
		Expect(status.Get(vc.Status.Conditions, valkeyv1.ConditionDegraded).Message).To(Equal(primary + " is on a lost Kubernetes node: " + lostMsg +
			"; shard 0 (primary " + survivor + ") has no replica in sync"))
		Expect(status.Get(vc.Status.Conditions, valkeyv1.ConditionReady).Message).To(ContainSubstring("ready on the survivors"))
		Expect(vc.Status.ReadyNodes).To(Equal(int32(5)))
		Expect(vc.Status.SlotsAssigned).To(Equal(int32(16384)))
		Expect(readKeys(f, pw, 300)).To(Equal(300), "every key is served by the survivors")

		By("the node returns: the server starts again on its data and rejoins as a replica")
		f.mu.Lock()
		Expect(f.startLocked(context.Background(), getNode(ns, primary))).To(Succeed())
		f.mu.Unlock()
		f.hold(false, primary)
		Eventually(clusterCondition(ns, "lost", valkeyv1.ConditionDegraded), 60*time.Second).Should(Equal("False/Healthy"))
		Eventually(clusterReady(ns, "lost"), 60*time.Second).Should(Succeed())
		Eventually(func() error { return checkHealthy(f, pw, 3, 1) }, 30*time.Second).Should(Succeed())
		Expect(getNode(ns, primary).Status.Topology.Role).To(Equal(valkeyv1.RoleReplica))
	})
})
