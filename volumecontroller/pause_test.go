package volumecontroller_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// setPaused sets or removes valkey.io/paused on a node.
func setPaused(ctx context.Context, n *valkeyv1.ValkeyNode, paused bool) {
	patch := `{"metadata":{"annotations":{"valkey.io/paused":null}}}`
	if paused {
		patch = `{"metadata":{"annotations":{"valkey.io/paused":"true"}}}`
	}
	Expect(k8s.Patch(ctx, &valkeyv1.ValkeyNode{ObjectMeta: metav1.ObjectMeta{Namespace: n.Namespace, Name: n.Name}},
		client.RawPatch(types.MergePatchType, []byte(patch)))).To(Succeed())
}

var _ = Describe("A paused node", func() {
	It("gets no claim and no finalizer until the pause is lifted; paused again, its deletion waits with its claim", func(ctx context.Context) {
		ns := newNamespace(ctx)
		class := newClass(ctx, "paused-"+ns, true, storagev1.VolumeBindingImmediate, nil)
		node := newNode(ns, "1Gi", &class.Name, valkeyv1.ReclaimDelete)
		node.Annotations = map[string]string{valkeyv1.AnnotationPaused: "true"}
		Expect(k8s.Create(ctx, node)).To(Succeed())
		Consistently(claimOf(ctx, node)).Should(BeNil())
		Expect(getNode(ctx, node).Finalizers).To(BeEmpty())

		By("the pause lifted")
		setPaused(ctx, node, false)
		bind(ctx, waitClaim(ctx, node), "1Gi")
		Eventually(condition(ctx, node, valkeyv1.ConditionVolumeReady)).Should(Equal("True/Bound"))
		Expect(getNode(ctx, node).Finalizers).To(ContainElement(valkeyv1.PVCProtectionFinalizer))

		By("paused by its cluster (the topology controller's Paused), then deleted and drained")
		Expect(status.Applier{Client: k8s, FieldManager: valkeyv1.FieldManagerTopology}.ApplyNode(ctx, getNode(ctx, node), status.TopologyShare{
			Conditions: []metav1.Condition{
				status.Condition(valkeyv1.ConditionPaused, true, valkeyv1.ReasonClusterPaused, "test plays topology"),
				status.Condition(valkeyv1.ConditionDrained, true, valkeyv1.ReasonNoSlots, "test plays topology"),
			},
		})).To(Succeed())
		Expect(k8s.Delete(ctx, node)).To(Succeed())
		Consistently(gone(ctx, node)).Should(BeFalse())
		Expect(claimOf(ctx, node)().DeletionTimestamp).To(BeNil(), "the claim (reclaimPolicy Delete) is kept while paused")

		By("the pause lifted: the reclaim policy applies")
		applyDrained(ctx, node, true, valkeyv1.ReasonNoSlots, 0) // the topology share without Paused
		Eventually(func() bool { c := claimOf(ctx, node)(); return c == nil || c.DeletionTimestamp != nil }).Should(BeTrue())
	})
})
