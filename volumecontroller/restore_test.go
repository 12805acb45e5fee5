package volumecontroller_test

import (
	"context"
	"fmt"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// backupSnapshot creates the VolumeSnapshot an earlier backup took of node "old-0-0",
// labelled as the controller labels them.
func backupSnapshot(ctx context.Context, ns, name string) {
	vs := &snapshotv1.VolumeSnapshot{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{
			valkeyv1.LabelManagedBy: valkeyv1.ManagedByValue, valkeyv1.LabelNode: "old-0-0", valkeyv1.LabelBackup: "nightly",
		}},
		Spec: snapshotv1.VolumeSnapshotSpec{Source: snapshotv1.VolumeSnapshotSource{PersistentVolumeClaimName: ptr.To("valkey-old-0-0-data")}},
	}
	Expect(k8s.Create(ctx, vs)).To(Succeed())
}

// restoredNode builds node c-0-0 that restores a snapshot.
func restoredNode(ns, size, class, snapshot string) *valkeyv1.ValkeyNode {
	node := newNode(ns, size, &class, "")
	node.Spec.Restore = &valkeyv1.NodeRestore{Backup: "nightly", SnapshotName: snapshot, Identity: valkeyv1.RestoreFresh}
	return node
}

var _ = Describe("claims restored from a snapshot", func() {
	var ns string
	BeforeEach(func(ctx context.Context) { ns = newNamespace(ctx) })

	DescribeTable("creates the claim from the snapshot, requesting the larger of the node's size and the snapshot's",
		func(ctx context.Context, nodeSize, restoreSize, want string) {
			class := newClass(ctx, "restore-"+ns, false, storagev1.VolumeBindingWaitForFirstConsumer, nil)
			backupSnapshot(ctx, ns, "nightly-0")
			setSnapshotStatus(ctx, ns, "nightly-0", func(s *snapshotv1.VolumeSnapshotStatus) {
				s.ReadyToUse = ptr.To(true)
				s.RestoreSize = ptr.To(resource.MustParse(restoreSize))
			})
			node := restoredNode(ns, nodeSize, class.Name, "nightly-0")
			Expect(k8s.Create(ctx, node)).To(Succeed())

			pvc := waitClaim(ctx, node)
			ref := corev1.TypedLocalObjectReference{APIGroup: ptr.To("snapshot.storage.k8s.io"), Kind: "VolumeSnapshot", Name: "nightly-0"}
			Expect(pvc.Spec.DataSource).To(HaveValue(Equal(ref)))
			Expect(pvc.Spec.DataSourceRef).To(HaveValue(Equal(corev1.TypedObjectReference{APIGroup: ref.APIGroup, Kind: ref.Kind, Name: ref.Name})))
			Expect(pvc.Spec.Resources.Requests.Storage().String()).To(Equal(want))
			Eventually(condition(ctx, node, valkeyv1.ConditionVolumeReady)).Should(Equal("True/WaitingForFirstConsumer"))
			Expect(getNode(ctx, node).Status.Volume).To(HaveValue(HaveField("RestoredFrom", "nightly-0")),
				"the topology controller reports Restored only on this word")
		},
		Entry("a snapshot larger than the node's size", "1Gi", "3Gi", "3Gi"),
		Entry("a snapshot smaller than the node's size", "2Gi", "500Mi", "2Gi"),
	)

	It("creates no claim while the snapshot is missing or not ready (RestoreSourceNotReady, a Warning while missing), then restores it", func(ctx context.Context) {
		class := newClass(ctx, "restorewait-"+ns, false, storagev1.VolumeBindingWaitForFirstConsumer, nil)
		node := restoredNode(ns, "1Gi", class.Name, "nightly-0")
		Expect(k8s.Create(ctx, node)).To(Succeed())

		Eventually(condition(ctx, node, valkeyv1.ConditionVolumeReady)).Should(Equal("False/RestoreSourceNotReady"))
		Expect(status.Get(getNode(ctx, node).Status.Conditions, valkeyv1.ConditionVolumeReady).Message).To(
			And(ContainSubstring("VolumeSnapshot nightly-0"), ContainSubstring("exists")))
		Eventually(countOf(eventReasons(ctx, node), "Warning/RestoreSourceNotReady")).Should(Equal(1))
		Consistently(claimOf(ctx, node)).Should(BeNil())

		By("the snapshot exists but is not ready to use")
		backupSnapshot(ctx, ns, "nightly-0")
		Eventually(func() string {
			return status.Get(getNode(ctx, node).Status.Conditions, valkeyv1.ConditionVolumeReady).Message
		}).Should(ContainSubstring("ready to use"))
		Expect(condition(ctx, node, valkeyv1.ConditionVolumeReady)()).To(Equal("False/RestoreSourceNotReady"))
		Consistently(claimOf(ctx, node)).Should(BeNil())
		Expect(countOf(eventReasons(ctx, node), "Warning/RestoreSourceNotReady")()).To(Equal(1))

		By("the snapshot becomes ready")
		setSnapshotStatus(ctx, ns, "nightly-0", func(s *snapshotv1.VolumeSnapshotStatus) {
			s.ReadyToUse = ptr.To(true)
			s.RestoreSize = ptr.To(resource.MustParse("1Gi"))
		})
		Expect(waitClaim(ctx, node).Spec.DataSource).To(HaveValue(HaveField("Name", "nightly-0")))
		Eventually(condition(ctx, node, valkeyv1.ConditionVolumeReady)).Should(Equal("True/WaitingForFirstConsumer"))
	})
})

// retainedClaim creates and binds the claim an earlier cluster "c" of the same name left
// behind under reclaimPolicy Retain: its node's labels and identity (the earlier cluster's
// UID), the release mark, and, when it was itself restored, the snapshot it was made from.
func retainedClaim(ctx context.Context, node *valkeyv1.ValkeyNode, class, madeFrom string) *corev1.PersistentVolumeClaim {
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name: valkeyv1.ClaimName(node.Name), Namespace: node.Namespace,
			Labels: valkeyv1.NodeLabels(node),
			Annotations: map[string]string{
				valkeyv1.AnnotationClaimIdentity: "0a1d0c1e-0000-4000-8000-000000000000/" + node.Name,
				valkeyv1.AnnotationClaimReleased: "2026-01-01T00:00:00Z",
			},
		},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: &class,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if madeFrom != "" {
		group := "snapshot.storage.k8s.io"
		pvc.Spec.DataSource = &corev1.TypedLocalObjectReference{APIGroup: &group, Kind: "VolumeSnapshot", Name: madeFrom}
		pvc.Spec.DataSourceRef = &corev1.TypedObjectReference{APIGroup: &group, Kind: "VolumeSnapshot", Name: madeFrom}
	}
	Expect(k8s.Create(ctx, pvc)).To(Succeed())
	bind(ctx, pvc, "1Gi")
	return pvc
}

var _ = Describe("a restored node whose claim name is taken by a retained claim", func() {
	var ns string
	BeforeEach(func(ctx context.Context) { ns = newNamespace(ctx) })

	DescribeTable("leaves the retained claim as it is (RestoreClaimExists, a Warning), and restores once the user deletes it",
		func(ctx context.Context, madeFrom string) {
			class := newClass(ctx, "retained-"+ns, false, storagev1.VolumeBindingImmediate, nil)
			backupSnapshot(ctx, ns, "nightly-0")
			setSnapshotStatus(ctx, ns, "nightly-0", func(s *snapshotv1.VolumeSnapshotStatus) {
				s.ReadyToUse = ptr.To(true)
				s.RestoreSize = ptr.To(resource.MustParse("1Gi"))
			})
			node := restoredNode(ns, "1Gi", class.Name, "nightly-0")
			retained := retainedClaim(ctx, node, class.Name, madeFrom)
			Expect(k8s.Create(ctx, node)).To(Succeed())

			Eventually(condition(ctx, node, valkeyv1.ConditionVolumeReady)).Should(Equal("False/RestoreClaimExists"))
			msg := status.Get(getNode(ctx, node).Status.Conditions, valkeyv1.ConditionVolumeReady).Message
			Expect(msg).To(And(ContainSubstring(retained.Name), ContainSubstring("VolumeSnapshot nightly-0"),
				ContainSubstring("delete"), ContainSubstring("another name")))
			Expect(condition(ctx, node, valkeyv1.ConditionVolumeSized)()).To(Equal("False/RestoreClaimExists"))
			Expect(getNode(ctx, node).Status.Volume).To(HaveValue(HaveField("RestoredFrom", "")),
				"a claim not made from the snapshot is never reported as restored")
			Eventually(countOf(eventReasons(ctx, node), "Warning/RestoreClaimExists")).Should(Equal(1))

			By("the retained claim is neither adopted nor deleted: its data stays the earlier cluster's")
			Consistently(func() string {
				pvc := claimOf(ctx, node)()
				_, released := pvc.Annotations[valkeyv1.AnnotationClaimReleased]
				return fmt.Sprintf("%s %s deleting=%t released=%t", pvc.UID, pvc.Annotations[valkeyv1.AnnotationClaimIdentity],
					pvc.DeletionTimestamp != nil, released)
			}, "2s").Should(Equal(fmt.Sprintf("%s %s deleting=false released=true", retained.UID, retained.Annotations[valkeyv1.AnnotationClaimIdentity])),
				"the claim holds data: the controller must not take it over or remove it")
			Expect(eventReasons(ctx, node)()).NotTo(ContainElement("Normal/ClaimAdopted"))
			Expect(countOf(eventReasons(ctx, node), "Warning/RestoreClaimExists")()).To(Equal(1))

			By("the user deletes the retained claim: the node's claim is made from the snapshot")
			Expect(k8s.Delete(ctx, retained)).To(Succeed())
			setClaimFinalizer(ctx, claimKey(node), false) // kube-controller-manager: no pod uses it
			Eventually(func() bool {
				pvc := claimOf(ctx, node)()
				return pvc != nil && pvc.UID != retained.UID
			}).Should(BeTrue())
			pvc := claimOf(ctx, node)()
			Expect(pvc.Spec.DataSource).To(HaveValue(HaveField("Name", "nightly-0")))
			Expect(pvc.Annotations).To(HaveKeyWithValue(valkeyv1.AnnotationClaimIdentity, clusterUID+"/"+node.Name))
			bind(ctx, pvc, "1Gi")
			Eventually(condition(ctx, node, valkeyv1.ConditionVolumeReady)).Should(Equal("True/Bound"))
			Expect(getNode(ctx, node).Status.Volume).To(HaveValue(HaveField("RestoredFrom", "nightly-0")))
		},
		Entry("a claim an earlier cluster made empty", ""),
		Entry("a claim an earlier cluster restored from the same snapshot, then wrote to", "nightly-0"),
	)
})
