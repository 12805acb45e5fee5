package volumecontroller_test

import (
	"context"

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
