package workloadcontroller_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

var _ = Describe("Live config", func() {
	It("a cluster node's live key changes without a roll, reaches its ConfigMap once the server runs it, and a restart key still rolls", func(ctx context.Context) {
		ns := newNamespace(ctx)
		n := createNode(ctx, ns, func(n *valkeyv1.ValkeyNode) {
			inCluster(n)
			n.Spec.Config = map[string]string{"maxmemory": "100mb"}
		})
		runningReady(ctx, n, "10.0.3.1")
		Eventually(condition(ctx, n, valkeyv1.ConditionRollPending)).Should(Equal("False/UpToDate"))
		hash := workloadStatus(ctx, n)().TemplateHash
		Expect(configMap(ctx, n)()).To(ContainSubstring(`maxmemory "100mb"`))

		By("maxmemory changed: no roll, and the ConfigMap keeps what the server runs")
		updateNode(ctx, n, func(n *valkeyv1.ValkeyNode) { n.Spec.Config["maxmemory"] = "200mb" })
		rollState := func() string {
			ws := workloadStatus(ctx, n)()
			return condition(ctx, n, valkeyv1.ConditionRollPending)() + " " + ws.DesiredTemplateHash + " " + ws.TemplateHash
		}
		Eventually(rollState).Should(Equal("False/UpToDate " + hash + " " + hash))
		Consistently(rollState).Should(Equal("False/UpToDate " + hash + " " + hash))
		Expect(configMap(ctx, n)()).To(ContainSubstring(`maxmemory "100mb"`))

		By("the topology controller reports the server runs it")
		live := status.Condition(valkeyv1.ConditionConfigApplied, true, valkeyv1.ReasonAppliedLive, "played by the test")
		playTopology(ctx, n, 1, live)
		Consistently(configMap(ctx, n)).Should(ContainSubstring(`maxmemory "100mb"`), "a report for an older generation is not one")
		playTopology(ctx, n, 0, live)
		Eventually(configMap(ctx, n)).Should(ContainSubstring(`maxmemory "200mb"`))
		Expect(statefulSet(ctx, n)().Spec.Template.Annotations).To(HaveKeyWithValue("valkey.io/template-hash", hash))
		Expect(eventReasons(ctx, n)()).NotTo(ContainElement(HavePrefix("Normal/RollRequested")))

		By("a key that needs a restart")
		updateNode(ctx, n, func(n *valkeyv1.ValkeyNode) { n.Spec.Config["maxclients"] = "500" })
		Eventually(condition(ctx, n, valkeyv1.ConditionRollPending)).Should(Equal("True/TemplateChanged"))
	})

	It("a node outside any cluster rolls for a live key too (no server sets it)", func(ctx context.Context) {
		ns := newNamespace(ctx)
		n := createNode(ctx, ns, func(n *valkeyv1.ValkeyNode) { n.Spec.Config = map[string]string{"maxmemory": "100mb"} })
		runningReady(ctx, n, "10.0.3.2")
		hash := workloadStatus(ctx, n)().TemplateHash
		updateNode(ctx, n, func(n *valkeyv1.ValkeyNode) { n.Spec.Config["maxmemory"] = "200mb" })
		Eventually(func() string { return workloadStatus(ctx, n)().DesiredTemplateHash }).ShouldNot(Equal(hash))
		Eventually(configMap(ctx, n)).Should(ContainSubstring(`maxmemory "200mb"`))
	})
})
