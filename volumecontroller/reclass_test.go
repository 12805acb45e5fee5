package volumecontroller_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// setClass changes the node's persistence.storageClassName, as the topology fan-out does.
func setClass(ctx context.Context, n *valkeyv1.ValkeyNode, class string) {
	Eventually(func() error {
		cur := getNode(ctx, n)
		cur.Spec.Persistence.StorageClassName = &class
		return k8s.Update(ctx, cur)
	}).Should(Succeed())
}

// releaseDeletedClaim plays kube-controller-manager's pvc-protection controller for a
// claim being deleted that no scheduled pod uses: it drops kubernetes.io/pvc-protection.
func releaseDeletedClaim(ctx context.Context, key types.NamespacedName) {
	Eventually(func() error {
		pvc := &corev1.PersistentVolumeClaim{}
		if err := k8s.Get(ctx, key, pvc); err != nil || pvc.DeletionTimestamp == nil {
			return client.IgnoreNotFound(err)
		}
		pvc.Finalizers = nil
		return k8s.Update(ctx, pvc)
	}).Should(Succeed())
}

var _ = Describe("storage class correction", func() {
	var ns string
	BeforeEach(func(ctx context.Context) { ns = newNamespace(ctx) })

	It("creates the claim once a misspelled class is corrected", func(ctx context.Context) {
		class := newClass(ctx, "fast-"+ns, false, storagev1.VolumeBindingImmediate, nil)
		node := newNode(ns, "1Gi", ptr.To("fsat-"+ns), "")
		Expect(k8s.Create(ctx, node)).To(Succeed())
		Eventually(condition(ctx, node, valkeyv1.ConditionVolumeReady)).Should(Equal("False/StorageClassNotFound"))
		Expect(claimOf(ctx, node)()).To(BeNil())

		setClass(ctx, node, class.Name)
		pvc := waitClaim(ctx, node)
		Expect(pvc.Spec.StorageClassName).To(HaveValue(Equal(class.Name)))
		bind(ctx, pvc, "1Gi")
		Eventually(condition(ctx, node, valkeyv1.ConditionVolumeReady)).Should(Equal("True/Bound"))
	})

	It("replaces a claim that was never bound with one of the corrected class", func(ctx context.Context) {
		wrong := newClass(ctx, "wrong-"+ns, false, storagev1.VolumeBindingImmediate, nil)
		right := newClass(ctx, "right-"+ns, false, storagev1.VolumeBindingImmediate, nil)
		node := newNode(ns, "1Gi", &wrong.Name, "")
		Expect(k8s.Create(ctx, node)).To(Succeed())
		old := waitClaim(ctx, node)
		setClaimFinalizer(ctx, claimKey(node), true) // as the API server's admission adds it
		Eventually(condition(ctx, node, valkeyv1.ConditionVolumeReady)).Should(Equal("False/Pending"))

		By("correcting the class while the claim waits for a volume that never comes")
		setClass(ctx, node, right.Name)
		Eventually(func() bool { pvc := claimOf(ctx, node)(); return pvc == nil || pvc.DeletionTimestamp != nil }).Should(BeTrue(),
			"the unbound claim of the old class is deleted")
		releaseDeletedClaim(ctx, claimKey(node))
		Eventually(func() *string {
			pvc := claimOf(ctx, node)()
			if pvc == nil || pvc.UID == old.UID {
				return nil
			}
			return pvc.Spec.StorageClassName
		}).Should(HaveValue(Equal(right.Name)))
		fresh := claimOf(ctx, node)()
		Expect(fresh.Annotations).To(HaveKeyWithValue(valkeyv1.AnnotationClaimIdentity, clusterUID+"/c-0-0"))

		bind(ctx, fresh, "1Gi")
		Eventually(condition(ctx, node, valkeyv1.ConditionVolumeReady)).Should(Equal("True/Bound"))
		Expect(getNode(ctx, node).Status.Volume.StorageClassName).To(Equal(right.Name))
		Expect(eventReasons(ctx, node)()).To(ContainElement("Normal/" + valkeyv1.EventClaimReplaced))
		Expect(eventReasons(ctx, node)()).NotTo(ContainElement("Warning/"+valkeyv1.EventClaimRecreated), "a claim that held no data was replaced")
	})

	It("refuses a class change for a bound claim and leaves the claim alone", func(ctx context.Context) {
		first := newClass(ctx, "first-"+ns, false, storagev1.VolumeBindingImmediate, nil)
		other := newClass(ctx, "other-"+ns, false, storagev1.VolumeBindingImmediate, nil)
		node := newNode(ns, "1Gi", &first.Name, "")
		Expect(k8s.Create(ctx, node)).To(Succeed())
		pvc := waitClaim(ctx, node)
		bind(ctx, pvc, "1Gi")
		Eventually(condition(ctx, node, valkeyv1.ConditionVolumeReady)).Should(Equal("True/Bound"))

		setClass(ctx, node, other.Name)
		Eventually(condition(ctx, node, valkeyv1.ConditionVolumeReady)).Should(Equal("False/" + valkeyv1.ReasonStorageClassImmutable))
		c := status.Get(getNode(ctx, node).Status.Conditions, valkeyv1.ConditionVolumeReady)
		GinkgoWriter.Printf("VolumeReady: %s\n", c.Message)
		Expect(c.Message).To(ContainSubstring(first.Name))
		Expect(c.Message).To(ContainSubstring("Set it back"))
		Eventually(eventReasons(ctx, node)).Should(ContainElement("Warning/" + valkeyv1.EventStorageClassImmutable))
		Consistently(func() types.UID { return claimOf(ctx, node)().UID }).Should(Equal(pvc.UID))
		cur := claimOf(ctx, node)()
		Expect(cur.DeletionTimestamp).To(BeNil())
		Expect(cur.Spec.StorageClassName).To(HaveValue(Equal(first.Name)))

		By("setting the class back")
		setClass(ctx, node, first.Name)
		Eventually(condition(ctx, node, valkeyv1.ConditionVolumeReady)).Should(Equal("True/Bound"))
	})
})
