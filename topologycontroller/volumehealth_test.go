package topologycontroller_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// reportVolumeHealth plays the volume controller: a node's VolumeHealthy and its volume's
// capacity and usage, with the volume field manager.
func reportVolumeHealth(ns, node string, healthy bool, reason, msg string, percent int32) {
	a := status.Applier{Client: k8s, FieldManager: valkeyv1.FieldManagerVolume}
	capacity := int64(1 << 30)
	ExpectWithOffset(1, a.ApplyNode(context.Background(), getNode(ns, node), status.VolumeShare{
		Conditions: []metav1.Condition{status.Condition(valkeyv1.ConditionVolumeHealthy, healthy, reason, msg)},
		Volume: &valkeyv1.VolumeStatus{Capacity: "1Gi", Usage: &valkeyv1.VolumeUsage{
			UsedBytes: capacity * int64(percent) / 100, CapacityBytes: capacity, Percent: percent, Persistence: "ok", MeasuredAt: metav1.Now(),
		}},
	})).To(Succeed())
}

// clusterConditionMessage is a ValkeyCluster condition's message ("" when absent).
func clusterConditionMessage(ns, name, condType string) string {
	if c := status.Get(getCluster(ns, name).Status.Conditions, condType); c != nil {
		return c.Message
	}
	return ""
}

var _ = Describe("Volume health", func() {

	It("degrades the cluster with VolumeUnhealthy naming a node whose volume is full, with a Warning event, and clears once it is healthy", func() {
		ns := newNamespace()
		formPersistentCluster(ns, "vh", 1, 1, false)
		node := valkeyv1.NodeName("vh", 0, 1)

		By("the volume controller reports the node's volume full")
		reportVolumeHealth(ns, node, false, valkeyv1.ReasonVolumeFull, "96% of /data is used", 96)
		Eventually(clusterCondition(ns, "vh", valkeyv1.ConditionDegraded), 20*time.Second).Should(Equal("True/VolumeUnhealthy"))
		msg := clusterConditionMessage(ns, "vh", valkeyv1.ConditionDegraded)
		Expect(msg).To(ContainSubstring(node + "'s volume is unhealthy (VolumeFull, 96% used: 983.0MiB of 1.0GiB)"))
		Expect(msg).To(ContainSubstring("raise spec.persistence.size, enable spec.persistence.autoGrow or raise its maxSize, or free space"))
		Expect(msg).To(ContainSubstring("MISCONF"))
		Expect(clusterCondition(ns, "vh", valkeyv1.ConditionReady)()).To(Equal("True/Ready"), "Ready is not changed by a volume")
		Eventually(func() int { return eventsWithReason(ns, valkeyv1.ReasonVolumeUnhealthy) }, 10*time.Second).Should(Equal(1))

		By("its usage moves while it stays full: no new event")
		reportVolumeHealth(ns, node, false, valkeyv1.ReasonVolumeFull, "97% of /data is used", 97)
		Eventually(func() string { return clusterConditionMessage(ns, "vh", valkeyv1.ConditionDegraded) }, 40*time.Second).Should(ContainSubstring("97% used"))
		Consistently(func() int { return eventsWithReason(ns, valkeyv1.ReasonVolumeUnhealthy) }, 3*time.Second).Should(Equal(1))

		By("the volume is healthy again")
		reportVolumeHealth(ns, node, true, valkeyv1.ReasonVolumeHealthy, "40% of /data is used", 40)
		Eventually(clusterCondition(ns, "vh", valkeyv1.ConditionDegraded), 20*time.Second).Should(Equal("False/Healthy"))
		Expect(clusterConditionMessage(ns, "vh", valkeyv1.ConditionDegraded)).To(Equal("every slot is served"))
	})

	It("reports VolumeHeadroom False when maxmemory allows more than half the volume, and True once the size is raised", func() {
		ns := newNamespace()
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": valkeyv1.GroupVersion.String(),
			"kind":       "ValkeyCluster",
			"metadata":   map[string]any{"name": "hr", "namespace": ns},
			"spec": map[string]any{"shards": int64(1), "replicas": int64(0), "config": map[string]any{"maxmemory": "1gb"},
				"persistence": map[string]any{"size": "1Gi"}},
		}}
		Expect(k8s.Create(context.Background(), u)).To(Succeed())
		Eventually(clusterCondition(ns, "hr", valkeyv1.ConditionVolumeHeadroom), 20*time.Second).Should(Equal("False/InsufficientHeadroom"))
		Expect(clusterConditionMessage(ns, "hr", valkeyv1.ConditionVolumeHeadroom)).To(Equal(
			"maxmemory 1gb allows a data set a save writes twice (the copy on disk and the one being written): the volume needs 2Gi; " +
				"persistence.size is 1Gi: raise it, or set persistence.autoGrow with maxSize ≥ 2Gi, or lower maxmemory"))
		Eventually(func() int { return eventsWithReason(ns, valkeyv1.ReasonInsufficientHeadroom) }, 10*time.Second).Should(Equal(1))

		By("the size is raised to 2Gi")
		patchSpec(ns, "hr", `{"persistence":{"size":"2Gi"}}`)
		Eventually(clusterCondition(ns, "hr", valkeyv1.ConditionVolumeHeadroom), 20*time.Second).Should(Equal("True/Sufficient"))
		Expect(eventsWithReason(ns, valkeyv1.ReasonInsufficientHeadroom)).To(Equal(1))
	})

	It("fails a backup whose shard's node reports VolumeHealthy=False, naming it, instead of waiting for its BGSAVE", func() {
		ns := newNamespace()
		formPersistentCluster(ns, "vb", 1, 0, false)
		node := valkeyv1.NodeName("vb", 0, 0)
		reportVolumeHealth(ns, node, false, valkeyv1.ReasonPersistenceFailing, "the server's last BGSAVE failed: it refuses writes with MISCONF", 60)
		Eventually(clusterCondition(ns, "vb", valkeyv1.ConditionDegraded), 20*time.Second).Should(Equal("True/VolumeUnhealthy"))

		newBackup(ns, "b", "vb")
		Eventually(backupState(ns, "b"), 30*time.Second).Should(Equal("Failed/" + valkeyv1.ReasonBackupVolumeUnhealthy))
		Expect(backupMessage(ns, "b")).To(ContainSubstring("shard 0: node " + node + " reports VolumeHealthy=False (PersistenceFailing): the server's last BGSAVE failed"))
		Expect(eventsWithReason(ns, valkeyv1.ReasonBackupVolumeUnhealthy)).To(BeNumerically(">=", 1))
	})
})
