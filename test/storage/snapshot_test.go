package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ktypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

// waitFor polls cond every 20ms until it holds or ctx ends.
func waitFor(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		if ctx.Err() != nil {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startsWith tells whether file begins with prefix.
func startsWith(t *testing.T, file, prefix string) bool {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	b := make([]byte, len(prefix))
	_, err = f.Read(b)
	return err == nil && string(b) == prefix
}

// boundClaim is claim name of class, bound to volume pv of node1 backed by file.
func boundClaim(name, class, file string) (*corev1.PersistentVolumeClaim, *corev1.PersistentVolume) {
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: ktypes.UID("c-" + name)},
		Spec:       corev1.PersistentVolumeClaimSpec{StorageClassName: &class, VolumeName: "pv-" + name},
		Status:     corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound},
	}
	pv := releasedVolume("pv-"+name, "node1", file)
	pv.Status.Phase = corev1.VolumeBound
	return pvc, pv
}

// The provisioner makes the content the snapshot-controller binds to (name, reference with
// UID, volume handle, class fields), copies the image and reports it ready with its size; a
// claim restoring from it smaller than that size is refused with an event, a larger one gets
// a copy grown to its size; the deleted content's image and finalizers go.
func TestSnapshotContentRestoreDelete(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	file := filepath.Join(dir, "pv-data.img")
	if err := os.WriteFile(file, []byte("volume-bytes"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(file, 400<<20); err != nil {
		t.Fatal(err)
	}
	pvc, pv := boundClaim("data", "loop", file)
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "loop"}, Provisioner: "test/loop"}
	vsc := &snapv1.VolumeSnapshotClass{ObjectMeta: metav1.ObjectMeta{Name: "valkey-loop"}, Driver: "test/loop",
		DeletionPolicy: snapv1.VolumeSnapshotContentDelete}
	vs := &snapv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "snap", UID: "s1"},
		Spec: snapv1.VolumeSnapshotSpec{VolumeSnapshotClassName: ptr.To("valkey-loop"),
			Source: snapv1.VolumeSnapshotSource{PersistentVolumeClaimName: ptr.To("data")}}}
	client := fake.NewClientset(sc, pvc, pv)
	cl := fakeClients(client, vsc, vs)
	p := newProvisioner(cl, "test/loop", "node1", dir, &fakeLoop{devs: map[string]string{}}, copyImages{})
	cl.start(ctx)
	go p.Run(ctx)

	contents := cl.snaps.SnapshotV1().VolumeSnapshotContents()
	var c *snapv1.VolumeSnapshotContent
	waitFor(ctx, t, "a ready content", func() bool {
		var err error
		c, err = contents.Get(ctx, "snapcontent-s1", metav1.GetOptions{})
		return err == nil && c.Status != nil && c.Status.ReadyToUse != nil && *c.Status.ReadyToUse
	})
	ref := c.Spec.VolumeSnapshotRef
	if ref.Name != "snap" || ref.Namespace != "ns" || ref.UID != "s1" || *c.Spec.Source.VolumeHandle != "pv-data" ||
		c.Spec.Driver != "test/loop" || *c.Spec.VolumeSnapshotClassName != "valkey-loop" ||
		c.Spec.DeletionPolicy != snapv1.VolumeSnapshotContentDelete {
		t.Fatalf("content spec %+v", c.Spec)
	}
	if *c.Status.RestoreSize != 400<<20 || *c.Status.SnapshotHandle != c.Name || *c.Status.CreationTime == 0 {
		t.Fatalf("content status %+v", c.Status)
	}
	image := filepath.Join(dir, "snapshots", "snapcontent-s1.img")
	if !startsWith(t, image, "volume-bytes") {
		t.Fatal("the image does not hold the volume's bytes")
	}

	// The snapshot-controller's part: bind the snapshot, ready.
	vs.Status = &snapv1.VolumeSnapshotStatus{BoundVolumeSnapshotContentName: ptr.To(c.Name), ReadyToUse: ptr.To(true)}
	if _, err := cl.snaps.SnapshotV1().VolumeSnapshots("ns").UpdateStatus(ctx, vs, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for name, size := range map[string]string{"small": "350Mi", "large": "1Gi"} {
		restore := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: ktypes.UID("u-" + name)},
			Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("loop"),
				DataSource: &corev1.TypedLocalObjectReference{APIGroup: ptr.To(snapshotGroup), Kind: "VolumeSnapshot", Name: "snap"},
				Resources:  corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}}},
			Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending},
		}
		if _, err := client.CoreV1().PersistentVolumeClaims("ns").Create(ctx, restore, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(ctx, t, "the larger claim's volume", func() bool {
		v, err := client.CoreV1().PersistentVolumes().Get(ctx, "pvc-u-large", metav1.GetOptions{})
		return err == nil && v.Spec.Capacity.Storage().Value() == 1<<30
	})
	restored := filepath.Join(dir, "pvc-u-large.img")
	if st, err := os.Stat(restored); err != nil || st.Size() != 1<<30 || !startsWith(t, restored, "volume-bytes") {
		t.Fatalf("restored file: %v %v", st, err)
	}
	waitFor(ctx, t, "RestoreTooSmall on the smaller claim", func() bool {
		evs, _ := client.CoreV1().Events("ns").List(ctx, metav1.ListOptions{})
		for _, e := range evs.Items {
			if e.InvolvedObject.Name == "small" && e.Reason == reasonRestoreTooSmall && strings.Contains(e.Message, "at least 400Mi") {
				return true
			}
		}
		return false
	})
	if _, err := client.CoreV1().PersistentVolumes().Get(ctx, "pvc-u-small", metav1.GetOptions{}); err == nil {
		t.Fatal("the smaller claim got a volume")
	}

	// The snapshot-controller deletes the content (policy Delete).
	c, _ = contents.Get(ctx, c.Name, metav1.GetOptions{})
	c.Finalizers = append(c.Finalizers, finalizerContentBound)
	c.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	if _, err := contents.Update(ctx, c, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "image and finalizers removed", func() bool {
		got, err := contents.Get(ctx, c.Name, metav1.GetOptions{})
		_, statErr := os.Stat(image)
		return err == nil && len(got.Finalizers) == 0 && os.IsNotExist(statErr)
	})
}

// A deleted content with deletionPolicy Retain keeps its image; its finalizers go.
func TestRetainedContentKeepsImage(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	image := filepath.Join(dir, "snapshots", "snapcontent-r1.img")
	if err := os.MkdirAll(filepath.Dir(image), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(image, []byte("kept"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := &snapv1.VolumeSnapshotContent{
		ObjectMeta: metav1.ObjectMeta{Name: "snapcontent-r1", Finalizers: []string{finalizerSnapshot, finalizerContentBound},
			Annotations: map[string]string{annContentNode: "node1"}, DeletionTimestamp: &metav1.Time{Time: time.Now()}},
		Spec: snapv1.VolumeSnapshotContentSpec{Driver: "test/loop", DeletionPolicy: snapv1.VolumeSnapshotContentRetain,
			Source: snapv1.VolumeSnapshotContentSource{VolumeHandle: ptr.To("pv-x")}},
		Status: &snapv1.VolumeSnapshotContentStatus{SnapshotHandle: ptr.To("snapcontent-r1"), ReadyToUse: ptr.To(true)},
	}
	cl := fakeClients(fake.NewClientset(), c)
	p := newProvisioner(cl, "test/loop", "node1", dir, &fakeLoop{devs: map[string]string{}}, copyImages{})
	cl.start(ctx)
	go p.Run(ctx)
	waitFor(ctx, t, "finalizers removed", func() bool {
		got, err := cl.snaps.SnapshotV1().VolumeSnapshotContents().Get(ctx, c.Name, metav1.GetOptions{})
		return err == nil && len(got.Finalizers) == 0
	})
	if _, err := os.Stat(image); err != nil {
		t.Fatalf("the retained image is gone: %v", err)
	}
}
