package volumecontroller_test

import (
	"context"
	"time"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
	"valkey.io/operator/volumecontroller"
)

// backupUID is the UID of the (absent) ValkeyBackup the saved points name.
const backupUID = "7b0c5e1a-0000-4000-8000-0000000000b1"

// newSnapshotClass creates a VolumeSnapshotClass of a driver, marked default or not, and
// removes it after the spec.
func newSnapshotClass(ctx context.Context, name, driver string, isDefault bool) *snapshotv1.VolumeSnapshotClass {
	c := &snapshotv1.VolumeSnapshotClass{
		ObjectMeta:     metav1.ObjectMeta{Name: name},
		Driver:         driver,
		DeletionPolicy: snapshotv1.VolumeSnapshotContentDelete,
	}
	if isDefault {
		c.Annotations = map[string]string{"snapshot.storage.kubernetes.io/is-default-class": "true"}
	}
	Expect(k8s.Create(ctx, c)).To(Succeed())
	DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(k8s.Delete(ctx, c))).To(Succeed()) })
	return c
}

// boundNode creates node c-0-0 of the given shard on a class and binds its claim.
func boundNode(ctx context.Context, ns, class string, shard int32) *valkeyv1.ValkeyNode {
	node := newNode(ns, "1Gi", &class, "")
	node.Spec.Shard = shard
	Expect(k8s.Create(ctx, node)).To(Succeed())
	bind(ctx, waitClaim(ctx, node), "1Gi")
	Eventually(condition(ctx, node, valkeyv1.ConditionVolumeReady)).Should(Equal("True/Bound"))
	return node
}

// savePoint plays the topology controller: the node's point is saved for backup (nil
// clears it).
func savePoint(ctx context.Context, n *valkeyv1.ValkeyNode, point *valkeyv1.SavedPoint) {
	a := status.Applier{Client: k8s, FieldManager: valkeyv1.FieldManagerTopology}
	share := status.TopologyShare{Topology: &valkeyv1.TopologyStatus{NodeID: "abc", SavedPoint: point}}
	Expect(a.ApplyNode(ctx, getNode(ctx, n), share)).To(Succeed())
}

func point(backup, class string) *valkeyv1.SavedPoint {
	return &valkeyv1.SavedPoint{Backup: backup, BackupUID: backupUID, VolumeSnapshotClassName: class, Offset: 42,
		SavedAt: metav1.NewMicroTime(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))}
}

// snapshotOf returns the VolumeSnapshot of a namespace by name, nil when absent.
func snapshotOf(ctx context.Context, ns, name string) func() *snapshotv1.VolumeSnapshot {
	return func() *snapshotv1.VolumeSnapshot {
		vs := &snapshotv1.VolumeSnapshot{}
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, vs); err != nil {
			return nil
		}
		return vs
	}
}

// setSnapshotStatus plays the snapshot-controller: it changes a VolumeSnapshot's status.
func setSnapshotStatus(ctx context.Context, ns, name string, change func(*snapshotv1.VolumeSnapshotStatus)) {
	Eventually(func() error {
		vs := &snapshotv1.VolumeSnapshot{}
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, vs); err != nil {
			return err
		}
		if vs.Status == nil {
			vs.Status = &snapshotv1.VolumeSnapshotStatus{}
		}
		change(vs.Status)
		return k8s.Status().Update(ctx, vs)
	}).Should(Succeed())
}

// snapshotStatus returns the node's status.volume.snapshot.
func snapshotStatus(ctx context.Context, n *valkeyv1.ValkeyNode) func() *valkeyv1.SnapshotStatus {
	return func() *valkeyv1.SnapshotStatus {
		if v := getNode(ctx, n).Status.Volume; v != nil {
			return v.Snapshot
		}
		return nil
	}
}

// countOf returns how many times a string is in a list.
func countOf(list func() []string, s string) func() int {
	return func() int {
		n := 0
		for _, e := range list() {
			if e == s {
				n++
			}
		}
		return n
	}
}

var _ = Describe("snapshots for a backup", func() {
	var ns string
	BeforeEach(func(ctx context.Context) { ns = newNamespace(ctx) })

	It("snapshots the claim of a node whose point is saved, once, owned by the backup, and reports it until the point is cleared", func(ctx context.Context) {
		class := newClass(ctx, "snap-"+ns, false, storagev1.VolumeBindingImmediate, nil)
		newSnapshotClass(ctx, "other-"+ns, "example.com/other", true)
		newSnapshotClass(ctx, "plain-"+ns, "example.com/test", false)
		snapClass := newSnapshotClass(ctx, "default-"+ns, "example.com/test", true)
		node := boundNode(ctx, ns, class.Name, 2)

		savePoint(ctx, node, point("nightly", ""))
		Eventually(snapshotOf(ctx, ns, "nightly-2")).ShouldNot(BeNil())
		vs := snapshotOf(ctx, ns, "nightly-2")()
		Expect(vs.Spec.Source.PersistentVolumeClaimName).To(HaveValue(Equal("valkey-c-0-0-data")))
		Expect(vs.Spec.VolumeSnapshotClassName).To(HaveValue(Equal(snapClass.Name)))
		Expect(vs.OwnerReferences).To(Equal([]metav1.OwnerReference{{
			APIVersion: "valkey.io/v1alpha1", Kind: "ValkeyBackup", Name: "nightly", UID: backupUID,
		}}))
		Expect(vs.Labels).To(Equal(map[string]string{
			valkeyv1.LabelCluster: "c", valkeyv1.LabelShard: "2", valkeyv1.LabelReplica: "0", valkeyv1.LabelNode: "c-0-0",
			valkeyv1.LabelManagedBy: valkeyv1.ManagedByValue, valkeyv1.LabelName: valkeyv1.NameValue, valkeyv1.LabelBackup: "nightly",
		}))
		Eventually(condition(ctx, node, valkeyv1.ConditionSnapshotReady)).Should(Equal("False/SnapshotPending"))
		Expect(snapshotStatus(ctx, node)()).To(Equal(&valkeyv1.SnapshotStatus{Name: "nightly-2", Backup: "nightly"}))
		Eventually(eventReasons(ctx, node)).Should(ContainElement("Normal/SnapshotCreated"))

		By("the driver cuts it (creationTime), and is still making it ready to use")
		cut := time.Date(2026, 11, 30, 12, 0, 5, 0, time.UTC)
		setSnapshotStatus(ctx, ns, "nightly-2", func(s *snapshotv1.VolumeSnapshotStatus) {
			s.BoundVolumeSnapshotContentName = ptr.To("snapcontent-1")
			s.CreationTime = ptr.To(metav1.NewTime(cut))
			s.ReadyToUse = ptr.To(false)
		})
		Eventually(condition(ctx, node, valkeyv1.ConditionSnapshotReady)).Should(Equal("False/SnapshotCut"))
		Expect(snapshotStatus(ctx, node)().CreationTime).To(HaveField("Time", BeTemporally("==", cut)))
		Expect(eventReasons(ctx, node)()).NotTo(ContainElement("Warning/SnapshotCut"))

		By("the snapshot-controller makes it ready")
		setSnapshotStatus(ctx, ns, "nightly-2", func(s *snapshotv1.VolumeSnapshotStatus) {
			s.ReadyToUse = ptr.To(true)
			s.RestoreSize = ptr.To(resource.MustParse("1Gi"))
		})
		Eventually(condition(ctx, node, valkeyv1.ConditionSnapshotReady)).Should(Equal("True/SnapshotReady"))
		got := snapshotStatus(ctx, node)()
		Expect(got.CreationTime).To(HaveField("Time", BeTemporally("==", cut)))
		got.CreationTime = nil
		Expect(got).To(Equal(&valkeyv1.SnapshotStatus{Name: "nightly-2", Backup: "nightly", ReadyToUse: true, RestoreSize: "1Gi"}))
		Expect(condition(ctx, node, valkeyv1.ConditionVolumeReady)()).To(Equal("True/Bound"))

		By("the snapshot-controller's bookkeeping changes nothing the node reports: no status write")
		writes := controllerWrites.in(ns)()
		setSnapshotStatus(ctx, ns, "nightly-2", func(s *snapshotv1.VolumeSnapshotStatus) {
			s.BoundVolumeSnapshotContentName = ptr.To("snapcontent-2")
			s.VolumeGroupSnapshotName = ptr.To("group-1")
		})
		Consistently(controllerWrites.in(ns)).Should(Equal(writes))

		By("the topology controller clears the point")
		savePoint(ctx, node, nil)
		Eventually(condition(ctx, node, valkeyv1.ConditionSnapshotReady)).Should(BeEmpty())
		Expect(snapshotStatus(ctx, node)()).To(BeNil())
		Consistently(snapshotOf(ctx, ns, "nightly-2")).ShouldNot(BeNil(), "the snapshot belongs to its backup: never deleted here")
		Expect(controllerWrites.in(ns)()).To(HaveKeyWithValue("POST volumesnapshots", 1))
		Expect(controllerWrites.in(ns)()).NotTo(HaveKey(HavePrefix("PATCH volumesnapshots")))
		Expect(controllerWrites.in(ns)()).NotTo(HaveKey(HavePrefix("DELETE volumesnapshots")))
	})

	It("reports a failed snapshot as SnapshotFailed with its error and one Warning event", func(ctx context.Context) {
		class := newClass(ctx, "snapfail-"+ns, false, storagev1.VolumeBindingImmediate, nil)
		newSnapshotClass(ctx, "named-"+ns, "example.com/test", false)
		node := boundNode(ctx, ns, class.Name, 0)
		savePoint(ctx, node, point("weekly", "named-"+ns))
		Eventually(snapshotOf(ctx, ns, "weekly-0")).ShouldNot(BeNil())
		Expect(snapshotOf(ctx, ns, "weekly-0")().Spec.VolumeSnapshotClassName).To(HaveValue(Equal("named-" + ns)))

		setSnapshotStatus(ctx, ns, "weekly-0", func(s *snapshotv1.VolumeSnapshotStatus) {
			s.ReadyToUse = ptr.To(false)
			s.Error = &snapshotv1.VolumeSnapshotError{Message: ptr.To("cannot find CSI PersistentVolumeSource")}
		})
		Eventually(func() string {
			if c := status.Get(getNode(ctx, node).Status.Conditions, valkeyv1.ConditionSnapshotReady); c != nil {
				return c.Message
			}
			return ""
		}).Should(ContainSubstring("the snapshot-controller retries after: cannot find CSI"), "an error before the content is bound is retried")
		Expect(condition(ctx, node, valkeyv1.ConditionSnapshotReady)()).To(Equal("False/SnapshotPending"))
		setSnapshotStatus(ctx, ns, "weekly-0", func(s *snapshotv1.VolumeSnapshotStatus) {
			s.BoundVolumeSnapshotContentName = ptr.To("snapcontent-weekly-0")
			s.Error = &snapshotv1.VolumeSnapshotError{Message: ptr.To("driver: out of snapshot quota")}
		})
		Eventually(condition(ctx, node, valkeyv1.ConditionSnapshotReady)).Should(Equal("False/SnapshotFailed"))
		Expect(status.Get(getNode(ctx, node).Status.Conditions, valkeyv1.ConditionSnapshotReady).Message).To(ContainSubstring("out of snapshot quota"))
		Eventually(countOf(eventReasons(ctx, node), "Warning/SnapshotFailed")).Should(Equal(1))
		setSnapshotStatus(ctx, ns, "weekly-0", func(s *snapshotv1.VolumeSnapshotStatus) { s.CreationTime = ptr.To(metav1.Now()) })
		Consistently(countOf(eventReasons(ctx, node), "Warning/SnapshotFailed")).Should(Equal(1))
	})

	It("refuses a claim whose provisioner has no VolumeSnapshotClass with SnapshotUnsupported and creates no snapshot, until a class of that driver appears", func(ctx context.Context) {
		driver := "example.com/nosnap-" + ns
		sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "nosnap-" + ns}, Provisioner: driver}
		Expect(k8s.Create(ctx, sc)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(k8s.Delete(ctx, sc))).To(Succeed()) })
		newSnapshotClass(ctx, "elsewhere-"+ns, "example.com/test", true)
		node := boundNode(ctx, ns, sc.Name, 1)

		savePoint(ctx, node, point("nightly", ""))
		Eventually(condition(ctx, node, valkeyv1.ConditionSnapshotReady)).Should(Equal("False/SnapshotUnsupported"))
		msg := status.Get(getNode(ctx, node).Status.Conditions, valkeyv1.ConditionSnapshotReady).Message
		Expect(msg).To(And(ContainSubstring(driver), ContainSubstring(sc.Name), ContainSubstring("create one")))
		Eventually(eventReasons(ctx, node)).Should(ContainElement("Warning/SnapshotUnsupported"))
		Consistently(snapshotOf(ctx, ns, "nightly-1")).Should(BeNil())

		By("a class of the claim's driver is created")
		newSnapshotClass(ctx, "nosnap-"+ns, driver, false)
		Eventually(snapshotOf(ctx, ns, "nightly-1")).ShouldNot(BeNil())
		Eventually(condition(ctx, node, valkeyv1.ConditionSnapshotReady)).Should(Equal("False/SnapshotPending"))
	})

	It("waits for the snapshot of a deleted backup of the same name to go, then takes its own", func(ctx context.Context) {
		class := newClass(ctx, "snapagain-"+ns, false, storagev1.VolumeBindingImmediate, nil)
		newSnapshotClass(ctx, "default-"+ns, "example.com/test", true)
		node := boundNode(ctx, ns, class.Name, 0)
		By("the snapshot of an earlier backup named nightly, deleted, is still there")
		earlier := volumecontroller.BuildSnapshot(getNode(ctx, node), &valkeyv1.SavedPoint{Backup: "nightly", BackupUID: "uid-of-the-earlier"},
			valkeyv1.ClaimName(node.Name), "")
		Expect(k8s.Create(ctx, earlier)).To(Succeed())

		savePoint(ctx, node, point("nightly", ""))
		Eventually(condition(ctx, node, valkeyv1.ConditionSnapshotReady)).Should(Equal("False/SnapshotPending"))
		Expect(status.Get(getNode(ctx, node).Status.Conditions, valkeyv1.ConditionSnapshotReady).Message).To(
			And(ContainSubstring("earlier backup named nightly"), ContainSubstring("uid-of-the-earlier")))
		Consistently(condition(ctx, node, valkeyv1.ConditionSnapshotReady)).Should(Equal("False/SnapshotPending"))

		By("the garbage collector deletes it")
		Expect(k8s.Delete(ctx, earlier)).To(Succeed())
		Eventually(func() []metav1.OwnerReference {
			if vs := snapshotOf(ctx, ns, "nightly-0")(); vs != nil {
				return vs.OwnerReferences
			}
			return nil
		}).Should(ContainElement(HaveField("UID", types.UID(backupUID))))
	})

	It("leaves a same-named snapshot of another backup alone and reports SnapshotFailed naming it", func(ctx context.Context) {
		class := newClass(ctx, "snapclash-"+ns, false, storagev1.VolumeBindingImmediate, nil)
		newSnapshotClass(ctx, "default-"+ns, "example.com/test", true)
		node := boundNode(ctx, ns, class.Name, 0)
		theirs := &snapshotv1.VolumeSnapshot{
			ObjectMeta: metav1.ObjectMeta{Name: "nightly-0", Namespace: ns, Labels: map[string]string{"team": "a"}},
			Spec:       snapshotv1.VolumeSnapshotSpec{Source: snapshotv1.VolumeSnapshotSource{PersistentVolumeClaimName: ptr.To("valkey-c-0-0-data")}},
		}
		Expect(k8s.Create(ctx, theirs)).To(Succeed())

		savePoint(ctx, node, point("nightly", ""))
		Eventually(condition(ctx, node, valkeyv1.ConditionSnapshotReady)).Should(Equal("False/SnapshotFailed"))
		Expect(status.Get(getNode(ctx, node).Status.Conditions, valkeyv1.ConditionSnapshotReady).Message).To(
			And(ContainSubstring("VolumeSnapshot nightly-0"), ContainSubstring("left alone")))
		Eventually(eventReasons(ctx, node)).Should(ContainElement("Warning/SnapshotFailed"))
		Consistently(func() string { return snapshotOf(ctx, ns, "nightly-0")().ResourceVersion }).Should(Equal(theirs.ResourceVersion))
	})
})
