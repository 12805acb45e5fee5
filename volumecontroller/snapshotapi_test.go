package volumecontroller_test

import (
	"context"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
	"valkey.io/operator/test/envtest"
	"valkey.io/operator/volumecontroller"
)

// On an API server without the VolumeSnapshot API (a second envtest, without the
// external-snapshotter CRDs) the controller starts, creates and reports claims, and
// refuses a backup's snapshot and a restore with SnapshotUnsupported and
// RestoreSourceNotReady, saying the API is not installed.
var _ = Describe("without the VolumeSnapshot API", func() {
	It("starts, creates claims, and refuses snapshots and restores saying the API is not installed", func(ctx context.Context) {
		e, err := envtest.Start()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(e.Stop)
		mgr, err := e.NewManager(volumecontroller.CacheOptions())
		Expect(err).NotTo(HaveOccurred())
		Expect(volumecontroller.SetupWithManager(mgr, volumecontroller.Options{})).To(Succeed())
		mctx, stop := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- mgr.Start(mctx) }()
		DeferCleanup(func() {
			stop()
			Expect(<-done).To(Succeed())
		})
		c, err := e.Client()
		Expect(err).NotTo(HaveOccurred())

		Expect(c.Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "std"}, Provisioner: "example.com/test"})).To(Succeed())
		node := &valkeyv1.ValkeyNode{
			ObjectMeta: metav1.ObjectMeta{Name: "c-0-0", Namespace: "default"},
			Spec: valkeyv1.ValkeyNodeSpec{ClusterName: "c", ServerSpec: valkeyv1.ServerSpec{
				Persistence: &valkeyv1.PersistenceSpec{Size: resource.MustParse("1Gi"), StorageClassName: ptr.To("std")}}},
		}
		Expect(c.Create(ctx, node)).To(Succeed())
		Eventually(func() error {
			return c.Get(ctx, client.ObjectKey{Namespace: "default", Name: valkeyv1.ClaimName(node.Name)}, &corev1.PersistentVolumeClaim{})
		}).Should(Succeed())

		topology := status.Applier{Client: c, FieldManager: valkeyv1.FieldManagerTopology}
		Expect(c.Get(ctx, client.ObjectKeyFromObject(node), node)).To(Succeed())
		Expect(topology.ApplyNode(ctx, node, status.TopologyShare{Topology: &valkeyv1.TopologyStatus{SavedPoint: point("nightly", "")}})).To(Succeed())
		Eventually(func() *metav1.Condition {
			Expect(c.Get(ctx, client.ObjectKeyFromObject(node), node)).To(Succeed())
			return status.Get(node.Status.Conditions, valkeyv1.ConditionSnapshotReady)
		}).Should(And(Not(BeNil()), HaveField("Reason", valkeyv1.ReasonSnapshotUnsupported),
			HaveField("Message", ContainSubstring("snapshot.storage.k8s.io/v1 is not installed"))))
		Expect(status.Get(node.Status.Conditions, valkeyv1.ConditionVolumeReady)).To(HaveField("Reason", valkeyv1.ReasonPending))

		restored := &valkeyv1.ValkeyNode{
			ObjectMeta: metav1.ObjectMeta{Name: "r-0-0", Namespace: "default"},
			Spec: valkeyv1.ValkeyNodeSpec{ClusterName: "r", ServerSpec: node.Spec.ServerSpec,
				Restore: &valkeyv1.NodeRestore{Backup: "nightly", SnapshotName: "nightly-0", Identity: valkeyv1.RestoreFresh}},
		}
		Expect(c.Create(ctx, restored)).To(Succeed())
		Eventually(func() string {
			Expect(c.Get(ctx, client.ObjectKeyFromObject(restored), restored)).To(Succeed())
			if cond := status.Get(restored.Status.Conditions, valkeyv1.ConditionVolumeReady); cond != nil && strings.Contains(cond.Message, "not installed") {
				return cond.Reason
			}
			return ""
		}).Should(Equal(valkeyv1.ReasonRestoreSourceNotReady))
		Expect(c.Get(ctx, client.ObjectKey{Namespace: "default", Name: valkeyv1.ClaimName(restored.Name)}, &corev1.PersistentVolumeClaim{})).NotTo(Succeed())
	})
})
