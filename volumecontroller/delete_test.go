package volumecontroller_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	storagev1 "k8s.io/api/storage/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

var _ = Describe("node deletion", func() {
	var ns string
	BeforeEach(func(ctx context.Context) { ns = newNamespace(ctx) })

	boundNode := func(ctx context.Context, policy valkeyv1.ReclaimPolicy) *valkeyv1.ValkeyNode {
		class := newClass(ctx, "immediate-"+ns, false, storagev1.VolumeBindingImmediate, nil)
		node := newNode(ns, "1Gi", &class.Name, policy)
		Expect(k8s.Create(ctx, node)).To(Succeed())
		bind(ctx, waitClaim(ctx, node), "1Gi")
		Eventually(condition(ctx, node, valkeyv1.ConditionVolumeReady)).Should(Equal("True/Bound"))
		return node
	}

	It("holds the node until it is drained, then retains the claim", func(ctx context.Context) {
		node := boundNode(ctx, valkeyv1.ReclaimRetain)
		claimUID := claimOf(ctx, node)().UID
		Expect(k8s.Delete(ctx, node)).To(Succeed())

		By("no Drained condition yet")
		Consistently(gone(ctx, node)).Should(BeFalse())
		Expect(volumeReady(ctx, node).Message).To(ContainSubstring("Drained"))

		By("Drained=False while slots move")
		applyDrained(ctx, node, false, valkeyv1.ReasonMigratingSlots, 0)
		Consistently(gone(ctx, node)).Should(BeFalse())

		By("Drained=True for an older generation")
		applyDrained(ctx, node, true, valkeyv1.ReasonNoSlots, -1)
		Consistently(gone(ctx, node)).Should(BeFalse())
		Expect(claimOf(ctx, node)().Annotations).NotTo(HaveKey(valkeyv1.AnnotationClaimReleased))

		By("Drained=True for the current generation")
		applyDrained(ctx, node, true, valkeyv1.ReasonNoSlots, 0)
		Eventually(gone(ctx, node)).Should(BeTrue())
		pvc := claimOf(ctx, node)()
		Expect(pvc.UID).To(Equal(claimUID))
		Expect(pvc.DeletionTimestamp).To(BeNil())
		Expect(pvc.Labels).To(HaveKeyWithValue(valkeyv1.LabelNode, node.Name))
		Expect(pvc.Labels).To(HaveKeyWithValue(valkeyv1.LabelCluster, "c"))
		Expect(pvc.Annotations).To(HaveKey(valkeyv1.AnnotationClaimReleased))
		Eventually(eventReasons(ctx, node)).Should(ContainElement("Normal/ClaimReleased"))
	})

	It("deletes the claim under reclaimPolicy Delete and waits until it is gone", func(ctx context.Context) {
		node := boundNode(ctx, valkeyv1.ReclaimDelete)
		setClaimFinalizer(ctx, claimKey(node), true) // a pod still uses it
		Expect(k8s.Delete(ctx, node)).To(Succeed())
		Consistently(func() bool { return claimOf(ctx, node)().DeletionTimestamp == nil }).Should(BeTrue())

		applyDrained(ctx, node, true, valkeyv1.ReasonNoSlots, 0)
		Eventually(func() bool { return claimOf(ctx, node)().DeletionTimestamp != nil }).Should(BeTrue())
		Eventually(condition(ctx, node, valkeyv1.ConditionVolumeReady)).Should(Equal("False/ClaimTerminating"))
		Consistently(gone(ctx, node)).Should(BeFalse())

		By("the pod goes, and the claim with it")
		setClaimFinalizer(ctx, claimKey(node), false)
		Eventually(claimOf(ctx, node)).Should(BeNil())
		Eventually(gone(ctx, node)).Should(BeTrue())
		Eventually(eventReasons(ctx, node)).Should(ContainElement("Normal/ClaimDeleted"))
	})

	It("stops waiting for Drained when the skip-drain annotation is set, and says so", func(ctx context.Context) {
		node := boundNode(ctx, valkeyv1.ReclaimRetain)
		Expect(k8s.Delete(ctx, node)).To(Succeed())
		applyDrained(ctx, node, false, valkeyv1.ReasonMigratingSlots, 0)
		Consistently(gone(ctx, node)).Should(BeFalse())

		Eventually(func() error {
			cur := getNode(ctx, node)
			cur.Annotations = map[string]string{valkeyv1.AnnotationSkipDrain: "true"}
			return k8s.Update(ctx, cur)
		}).Should(Succeed())
		Eventually(gone(ctx, node)).Should(BeTrue())
		Expect(claimOf(ctx, node)().Annotations).To(HaveKey(valkeyv1.AnnotationClaimReleased))
		Eventually(eventReasons(ctx, node)).Should(ContainElement("Warning/DrainSkipped"))
	})

	It("lets a node that never got a claim go with skip-drain", func(ctx context.Context) {
		missing := "missing-" + ns
		node := newNode(ns, "1Gi", &missing, valkeyv1.ReclaimDelete)
		node.Annotations = map[string]string{valkeyv1.AnnotationSkipDrain: ""}
		Expect(k8s.Create(ctx, node)).To(Succeed())
		Eventually(condition(ctx, node, valkeyv1.ConditionVolumeReady)).Should(Equal("False/StorageClassNotFound"))
		Expect(k8s.Delete(ctx, node)).To(Succeed())
		Eventually(gone(ctx, node)).Should(BeTrue())
		Eventually(eventReasons(ctx, node)).Should(ContainElement("Warning/DrainSkipped"))
	})

	It("lets a node whose claim is still being resized go once drained", func(ctx context.Context) {
		class := newClass(ctx, "expandable-"+ns, true, storagev1.VolumeBindingImmediate, nil)
		node := newNode(ns, "1Gi", &class.Name, valkeyv1.ReclaimRetain)
		Expect(k8s.Create(ctx, node)).To(Succeed())
		bind(ctx, waitClaim(ctx, node), "1Gi")
		Eventually(func() error {
			cur := getNode(ctx, node)
			cur.Spec.Persistence.Size.Set(2 << 30)
			return k8s.Update(ctx, cur)
		}).Should(Succeed())
		Eventually(condition(ctx, node, valkeyv1.ConditionVolumeSized)).Should(Equal("False/Resizing"))

		Expect(k8s.Delete(ctx, node)).To(Succeed())
		applyDrained(ctx, node, true, valkeyv1.ReasonClusterDeleting, 0)
		Eventually(gone(ctx, node)).Should(BeTrue())
	})
})
