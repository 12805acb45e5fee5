package workloadcontroller_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

var _ = Describe("A paused node", func() {
	It("keeps its workload as it is while paused by its annotation or by its cluster, and rolls once the pause is lifted", func(ctx context.Context) {
		ns := newNamespace(ctx)
		n := createNode(ctx, ns, nil)
		runningReady(ctx, n, "10.0.4.1")
		Eventually(condition(ctx, n, valkeyv1.ConditionRollPending)).Should(Equal("False/UpToDate"))

		By("its own annotation")
		updateNode(ctx, n, func(n *valkeyv1.ValkeyNode) {
			n.Annotations = map[string]string{valkeyv1.AnnotationPaused: "true"}
			n.Spec.Image = "valkey/valkey:8.1"
		})
		Consistently(image(ctx, n)).Should(Equal("valkey/valkey:8.0"))
		updateNode(ctx, n, func(n *valkeyv1.ValkeyNode) { delete(n.Annotations, valkeyv1.AnnotationPaused) })
		Eventually(image(ctx, n)).Should(Equal("valkey/valkey:8.1"), "a node outside any cluster rolls at once")

		By("its cluster paused (the topology controller's Paused)")
		c := createNode(ctx, newNamespace(ctx), inCluster)
		runningReady(ctx, c, "10.0.4.2")
		playTopology(ctx, c, 0, status.Condition(valkeyv1.ConditionPaused, true, valkeyv1.ReasonClusterPaused, "played by the test"))
		updateNode(ctx, c, func(n *valkeyv1.ValkeyNode) { n.Spec.Image = "valkey/valkey:8.1" })
		playTopology(ctx, c, 0, approved(), status.Condition(valkeyv1.ConditionPaused, true, valkeyv1.ReasonClusterPaused, "played by the test"))
		Consistently(image(ctx, c)).Should(Equal("valkey/valkey:8.0"), "an approved roll waits while paused")
		playTopology(ctx, c, 0, approved())
		Eventually(image(ctx, c)).Should(Equal("valkey/valkey:8.1"))
	})
})
