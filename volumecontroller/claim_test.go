package volumecontroller_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

var _ = Describe("claim per node", func() {
	var ns string
	BeforeEach(func(ctx context.Context) { ns = newNamespace(ctx) })

	It("creates the claim before any workload and reports Pending, then Bound", func(ctx context.Context) {
		class := newClass(ctx, "immediate-"+ns, false, storagev1.VolumeBindingImmediate, nil)
		node := newNode(ns, "1Gi", &class.Name, "")
		Expect(k8s.Create(ctx, node)).To(Succeed())

		pvc := waitClaim(ctx, node)
		Expect(pvc.Name).To(Equal("valkey-c-0-0-data"))
		Expect(pvc.Labels).To(Equal(map[string]string{
			valkeyv1.LabelCluster: "c", valkeyv1.LabelShard: "0", valkeyv1.LabelReplica: "0",
			valkeyv1.LabelNode: "c-0-0", valkeyv1.LabelManagedBy: valkeyv1.ManagedByValue, valkeyv1.LabelName: valkeyv1.NameValue,
		}))
		Expect(pvc.Annotations).To(HaveKeyWithValue(valkeyv1.AnnotationClaimIdentity, clusterUID+"/c-0-0"))
		Expect(pvc.OwnerReferences).To(BeEmpty())
		Expect(pvc.Spec.AccessModes).To(Equal([]corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}))
		Expect(pvc.Spec.StorageClassName).To(HaveValue(Equal(class.Name)))
		Expect(pvc.Spec.Resources.Requests.Storage().String()).To(Equal("1Gi"))
		Expect(getNode(ctx, node).Finalizers).To(ContainElement(valkeyv1.PVCProtectionFinalizer))

		Eventually(condition(ctx, node, valkeyv1.ConditionVolumeReady)).Should(Equal("False/Pending"))
		Expect(getNode(ctx, node).Status.Volume).To(Equal(&valkeyv1.VolumeStatus{
			ClaimName: pvc.Name, StorageClassName: class.Name, Requested: "1Gi", Phase: "Pending",
		}))

		bind(ctx, pvc, "1Gi")
		Eventually(condition(ctx, node, valkeyv1.ConditionVolumeReady)).Should(Equal("True/Bound"))
		Eventually(condition(ctx, node, valkeyv1.ConditionVolumeSized)).Should(Equal("True/Sized"))
		cur := getNode(ctx, node)
		Expect(cur.Status.Volume).To(Equal(&valkeyv1.VolumeStatus{
			ClaimName: pvc.Name, StorageClassName: class.Name, Requested: "1Gi", Capacity: "1Gi", Phase: "Bound",
		}))
		for _, c := range cur.Status.Conditions {
			Expect(c.ObservedGeneration).To(Equal(cur.Generation))
		}
		Expect(claimsInState("Bound")).To(BeNumerically(">=", 1))

		By("a claim the PV controller reports Lost")
		setClaimStatus(ctx, pvc, func(s *corev1.PersistentVolumeClaimStatus) { s.Phase = corev1.ClaimLost })
		Eventually(condition(ctx, node, valkeyv1.ConditionVolumeReady)).Should(Equal("False/ClaimLost"))
	})

	It("reports a claim waiting for its first consumer as ready, so the pod can start", func(ctx context.Context) {
		class := newClass(ctx, "wffc-"+ns, false, storagev1.VolumeBindingWaitForFirstConsumer, nil)
		node := newNode(ns, "1Gi", &class.Name, "")
		Expect(k8s.Create(ctx, node)).To(Succeed())
		Eventually(condition(ctx, node, valkeyv1.ConditionVolumeReady)).Should(Equal("True/WaitingForFirstConsumer"))
		Expect(condition(ctx, node, valkeyv1.ConditionVolumeSized)()).To(Equal("False/Pending"))
		Expect(claimOf(ctx, node)().Status.Phase).To(Equal(corev1.ClaimPending))
	})

	It("uses the cluster's default StorageClass when the node names none", func(ctx context.Context) {
		class := newClass(ctx, "default-"+ns, false, storagev1.VolumeBindingWaitForFirstConsumer,
			map[string]string{"storageclass.kubernetes.io/is-default-class": "true"})
		node := newNode(ns, "1Gi", nil, "")
		Expect(k8s.Create(ctx, node)).To(Succeed())
		Eventually(condition(ctx, node, valkeyv1.ConditionVolumeReady)).Should(Equal("True/WaitingForFirstConsumer"))
		Expect(claimOf(ctx, node)().Spec.StorageClassName).To(HaveValue(Equal(class.Name)))
		Expect(getNode(ctx, node).Status.Volume.StorageClassName).To(Equal(class.Name))
	})

	It("creates nothing and needs no finalizer without persistence", func(ctx context.Context) {
		node := newNode(ns, "", nil, "")
		Expect(k8s.Create(ctx, node)).To(Succeed())
		Eventually(condition(ctx, node, valkeyv1.ConditionVolumeReady)).Should(Equal("True/Ephemeral"))
		Expect(condition(ctx, node, valkeyv1.ConditionVolumeSized)()).To(Equal("True/Ephemeral"))
		var claims corev1.PersistentVolumeClaimList
		Expect(k8s.List(ctx, &claims, client.InNamespace(ns))).To(Succeed())
		Expect(claims.Items).To(BeEmpty())
		Expect(getNode(ctx, node).Finalizers).To(BeEmpty())
		Expect(k8s.Delete(ctx, node)).To(Succeed())
		Eventually(gone(ctx, node)).Should(BeTrue())
	})

	It("creates the claim when persistence is enabled on a running node", func(ctx context.Context) {
		class := newClass(ctx, "wffc-"+ns, false, storagev1.VolumeBindingWaitForFirstConsumer, nil)
		node := newNode(ns, "", nil, "")
		Expect(k8s.Create(ctx, node)).To(Succeed())
		Eventually(condition(ctx, node, valkeyv1.ConditionVolumeReady)).Should(Equal("True/Ephemeral"))

		Eventually(func() error {
			cur := getNode(ctx, node)
			cur.Spec.Persistence = &valkeyv1.PersistenceSpec{Size: resource.MustParse("1Gi"), StorageClassName: &class.Name}
			return k8s.Update(ctx, cur)
		}).Should(Succeed())
		Eventually(condition(ctx, node, valkeyv1.ConditionVolumeReady)).Should(Equal("True/WaitingForFirstConsumer"))
		cur := getNode(ctx, node)
		Expect(status.Get(cur.Status.Conditions, valkeyv1.ConditionVolumeReady).ObservedGeneration).To(Equal(cur.Generation))
		Expect(cur.Finalizers).To(ContainElement(valkeyv1.PVCProtectionFinalizer))
		Expect(claimOf(ctx, node)()).NotTo(BeNil())
	})

	It("waits for a missing StorageClass and picks it up when it appears", func(ctx context.Context) {
		name := "late-" + ns
		node := newNode(ns, "1Gi", &name, "")
		Expect(k8s.Create(ctx, node)).To(Succeed())
		Eventually(condition(ctx, node, valkeyv1.ConditionVolumeReady)).Should(Equal("False/StorageClassNotFound"))
		Expect(claimOf(ctx, node)()).To(BeNil())
		Expect(volumeReady(ctx, node).Message).To(ContainSubstring(name))

		newClass(ctx, name, false, storagev1.VolumeBindingWaitForFirstConsumer, nil)
		Eventually(condition(ctx, node, valkeyv1.ConditionVolumeReady)).Should(Equal("True/WaitingForFirstConsumer"))
		Expect(claimOf(ctx, node)().Spec.StorageClassName).To(HaveValue(Equal(name)))
	})

	It("recreates a hand-deleted claim only once the old one is gone", func(ctx context.Context) {
		class := newClass(ctx, "immediate-"+ns, false, storagev1.VolumeBindingImmediate, nil)
		node := newNode(ns, "1Gi", &class.Name, "")
		Expect(k8s.Create(ctx, node)).To(Succeed())
		old := waitClaim(ctx, node)
		bind(ctx, old, "1Gi")
		Eventually(condition(ctx, node, valkeyv1.ConditionVolumeReady)).Should(Equal("True/Bound"))

		By("deleting the claim while a pod uses it")
		setClaimFinalizer(ctx, claimKey(node), true)
		Expect(k8s.Delete(ctx, old)).To(Succeed())
		Eventually(condition(ctx, node, valkeyv1.ConditionVolumeReady)).Should(Equal("False/ClaimTerminating"))
		Consistently(func() types.UID { return claimOf(ctx, node)().UID }).Should(Equal(old.UID))

		By("the pod goes, and the claim with it")
		setClaimFinalizer(ctx, claimKey(node), false)
		Eventually(func() bool {
			pvc := claimOf(ctx, node)()
			return pvc != nil && pvc.UID != old.UID
		}).Should(BeTrue())
		fresh := claimOf(ctx, node)()
		Expect(fresh.DeletionTimestamp).To(BeNil())
		Expect(fresh.Annotations).To(HaveKeyWithValue(valkeyv1.AnnotationClaimIdentity, clusterUID+"/c-0-0"))
		Eventually(condition(ctx, node, valkeyv1.ConditionVolumeReady)).Should(Equal("False/Pending"))
		Eventually(eventReasons(ctx, node)).Should(ContainElement("Warning/ClaimRecreated"))
	})

	It("puts back labels removed by hand from its own claim", func(ctx context.Context) {
		class := newClass(ctx, "immediate-"+ns, false, storagev1.VolumeBindingImmediate, nil)
		node := newNode(ns, "1Gi", &class.Name, "")
		Expect(k8s.Create(ctx, node)).To(Succeed())
		pvc := waitClaim(ctx, node)
		bind(ctx, pvc, "1Gi")
		Eventually(condition(ctx, node, valkeyv1.ConditionVolumeReady)).Should(Equal("True/Bound"))

		Eventually(func() error {
			cur := claimOf(ctx, node)()
			cur.Labels = nil
			return k8s.Update(ctx, cur)
		}).Should(Succeed())
		Eventually(func() map[string]string { return claimOf(ctx, node)().Labels }).
			Should(HaveKeyWithValue(valkeyv1.LabelManagedBy, valkeyv1.ManagedByValue))
		Expect(claimOf(ctx, node)().UID).To(Equal(pvc.UID))
		Eventually(condition(ctx, node, valkeyv1.ConditionVolumeReady)).Should(Equal("True/Bound"))
	})

	It("never adopts a claim of another identity", func(ctx context.Context) {
		class := newClass(ctx, "immediate-"+ns, true, storagev1.VolumeBindingImmediate, nil)
		node := newNode(ns, "2Gi", &class.Name, "")
		foreign := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{
				Name: valkeyv1.ClaimName(node.Name), Namespace: ns,
				Labels:      map[string]string{valkeyv1.LabelManagedBy: valkeyv1.ManagedByValue, valkeyv1.LabelNode: node.Name},
				Annotations: map[string]string{valkeyv1.AnnotationClaimIdentity: "another-cluster/c-0-0"},
			},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				StorageClassName: &class.Name,
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceStorage: resource.MustParse("1Gi")}},
			},
		}
		Expect(k8s.Create(ctx, foreign)).To(Succeed())
		bind(ctx, foreign, "1Gi")
		Expect(k8s.Create(ctx, node)).To(Succeed())

		Eventually(condition(ctx, node, valkeyv1.ConditionVolumeReady)).Should(Equal("False/ClaimConflict"))
		Consistently(func() string {
			pvc := claimOf(ctx, node)()
			return pvc.Annotations[valkeyv1.AnnotationClaimIdentity] + " " + pvc.Spec.Resources.Requests.Storage().String()
		}).Should(Equal("another-cluster/c-0-0 1Gi"))
		Eventually(eventReasons(ctx, node)).Should(ContainElement("Warning/ClaimConflict"))

		By("deleting the node does not touch the foreign claim")
		Expect(k8s.Delete(ctx, node)).To(Succeed())
		applyDrained(ctx, node, true, valkeyv1.ReasonNeverJoined, 0)
		Eventually(gone(ctx, node)).Should(BeTrue())
		pvc := claimOf(ctx, node)()
		Expect(pvc.DeletionTimestamp).To(BeNil())
		Expect(pvc.Annotations).NotTo(HaveKey(valkeyv1.AnnotationClaimReleased))
	})

	It("reports a conflict with a claim the operator did not make", func(ctx context.Context) {
		class := newClass(ctx, "immediate-"+ns, false, storagev1.VolumeBindingImmediate, nil)
		node := newNode(ns, "1Gi", &class.Name, "")
		unlabeled := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: valkeyv1.ClaimName(node.Name), Namespace: ns},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceStorage: resource.MustParse("1Gi")}},
				StorageClassName: ptr.To(""),
			},
		}
		Expect(k8s.Create(ctx, unlabeled)).To(Succeed())
		Expect(k8s.Create(ctx, node)).To(Succeed())
		Eventually(condition(ctx, node, valkeyv1.ConditionVolumeReady)).Should(Equal("False/ClaimConflict"))
		Expect(claimOf(ctx, node)().Annotations).NotTo(HaveKey(valkeyv1.AnnotationClaimIdentity))
	})

	It("adopts a claim its namesake released under Retain", func(ctx context.Context) {
		class := newClass(ctx, "immediate-"+ns, false, storagev1.VolumeBindingImmediate, nil)
		node := newNode(ns, "1Gi", &class.Name, "")
		retained := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{
				Name: valkeyv1.ClaimName(node.Name), Namespace: ns,
				Labels: map[string]string{valkeyv1.LabelManagedBy: valkeyv1.ManagedByValue, valkeyv1.LabelNode: node.Name},
				Annotations: map[string]string{
					valkeyv1.AnnotationClaimIdentity: "old-cluster-uid/c-0-0",
					valkeyv1.AnnotationClaimReleased: "2026-01-01T00:00:00Z",
				},
			},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				StorageClassName: &class.Name,
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceStorage: resource.MustParse("1Gi")}},
			},
		}
		Expect(k8s.Create(ctx, retained)).To(Succeed())
		bind(ctx, retained, "1Gi")
		Expect(k8s.Create(ctx, node)).To(Succeed())

		Eventually(condition(ctx, node, valkeyv1.ConditionVolumeReady)).Should(Equal("True/Bound"))
		pvc := claimOf(ctx, node)()
		Expect(pvc.UID).To(Equal(retained.UID))
		Expect(pvc.Annotations).To(HaveKeyWithValue(valkeyv1.AnnotationClaimIdentity, clusterUID+"/c-0-0"))
		Expect(pvc.Annotations).NotTo(HaveKey(valkeyv1.AnnotationClaimReleased))
		Expect(pvc.Labels).To(HaveKeyWithValue(valkeyv1.LabelCluster, "c"))
		Eventually(eventReasons(ctx, node)).Should(ContainElement("Normal/ClaimAdopted"))
	})
})

// volumeReady returns the node's VolumeReady condition.
func volumeReady(ctx context.Context, n *valkeyv1.ValkeyNode) metav1.Condition {
	c := getNode(ctx, n).Status.Conditions
	for _, x := range c {
		if x.Type == valkeyv1.ConditionVolumeReady {
			return x
		}
	}
	return metav1.Condition{}
}
