package main

import (
	"fmt"
	"os"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2"
)

// Event reasons on a claim that restores from a snapshot.
const (
	reasonRestoreUnsupported = "RestoreUnsupported"
	reasonRestoreTooSmall    = "RestoreTooSmall"
	reasonRestoreFailed      = "RestoreFailed"
)

// snapshotSource is the name of the VolumeSnapshot claim c restores from ("" when none).
func snapshotSource(c *corev1.PersistentVolumeClaim) string {
	// The API server mirrors dataSource into dataSourceRef; a source in another namespace
	// (dataSourceRef only) is not supported here.
	if ref := c.Spec.DataSource; ref != nil && ref.Kind == "VolumeSnapshot" && ref.APIGroup != nil && *ref.APIGroup == snapshotGroup {
		return ref.Name
	}
	return ""
}

// restoreSource is the image claim c restores from and its size, once its VolumeSnapshot is
// bound and ready. ok is false while the claim waits for the snapshot, or when it cannot be
// restored into a volume of size bytes (a Warning event on the claim says why).
func (p *provisioner) restoreSource(c *corev1.PersistentVolumeClaim, name string, size int64) (file string, srcSize int64, ok bool) {
	vs, err := p.snapshots.VolumeSnapshots(c.Namespace).Get(name)
	if err != nil || vs.Status == nil || vs.Status.BoundVolumeSnapshotContentName == nil ||
		vs.Status.ReadyToUse == nil || !*vs.Status.ReadyToUse {
		klog.Infof("%s/%s waits for snapshot %s to be ready", c.Namespace, c.Name, name)
		return "", 0, false
	}
	content, err := p.contents.Get(*vs.Status.BoundVolumeSnapshotContentName)
	if err != nil || content.Status == nil || content.Status.SnapshotHandle == nil {
		return "", 0, false
	}
	if content.Spec.Driver != p.name {
		p.recorder.Eventf(c, corev1.EventTypeWarning, reasonRestoreUnsupported,
			"snapshot %s was taken by driver %s: class %s (%s) restores only snapshots of its own driver",
			name, content.Spec.Driver, *c.Spec.StorageClassName, p.name)
		return "", 0, false
	}
	file = p.snapshotImage(*content.Status.SnapshotHandle)
	st, err := os.Stat(file)
	if err != nil {
		p.recorder.Eventf(c, corev1.EventTypeWarning, reasonRestoreFailed, "image of snapshot %s: %v", name, err)
		return "", 0, false
	}
	if size < st.Size() {
		p.recorder.Eventf(c, corev1.EventTypeWarning, reasonRestoreTooSmall,
			"the claim asks for %s, less than the restore size of snapshot %s (%s): ask for at least %s",
			quantity(size), name, quantity(st.Size()), quantity(st.Size()))
		return "", 0, false
	}
	return file, st.Size(), true
}

// quantity prints n bytes as a Kubernetes quantity.
func quantity(n int64) string { return resource.NewQuantity(n, resource.BinarySI).String() }

// restoreImage makes file, of size bytes, a copy of the snapshot image src (srcSize bytes), its
// file system grown to the new size when larger, with a UUID of its own. dev is the loop device
// attached to file afterwards by attach.
func (p *provisioner) restoreImage(src, file string, srcSize, size int64, attach func() (string, error)) (string, error) {
	if err := p.images.Clone(src, file); err != nil {
		return "", err
	}
	if err := ensureFile(file, size); err != nil {
		return "", err
	}
	dev, err := attach()
	if err != nil {
		return "", err
	}
	if err := p.images.Adopt(dev, size > srcSize); err != nil {
		return dev, fmt.Errorf("restore %s from %s: %w", file, src, err)
	}
	return dev, nil
}

// snapshotFinished tells whether a content is ready or failed.
func snapshotFinished(c *snapv1.VolumeSnapshotContent) bool {
	return c.Status != nil && ((c.Status.ReadyToUse != nil && *c.Status.ReadyToUse) || c.Status.Error != nil)
}
