package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
)

// snapshotImage is the file of the snapshot whose handle is handle.
func (p *provisioner) snapshotImage(handle string) string {
	return filepath.Join(p.diskDir, snapshotsFolder, handle+".img")
}

// syncContent takes the snapshot of a content this node serves, or removes it when deleted.
func (p *provisioner) syncContent(ctx context.Context, name string) error {
	c, err := p.contents.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	if c.Spec.Driver != p.name || c.Annotations[annContentNode] != p.node {
		return nil
	}
	if c.DeletionTimestamp != nil {
		return p.deleteContent(ctx, c)
	}
	if snapshotFinished(c) {
		return nil // done, or failed: a failed snapshot is not retried (delete it, take another)
	}
	// The informer may not show our own status yet: the API server's copy says whether the
	// snapshot is still to be taken.
	c, err = p.snaps.SnapshotV1().VolumeSnapshotContents().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) || (err == nil && (snapshotFinished(c) || c.DeletionTimestamp != nil)) {
		return nil
	} else if err != nil {
		return err
	}
	return p.takeSnapshot(ctx, c)
}

// takeSnapshot copies the source volume's image and records the snapshot in the content's
// status, or the reason it could not.
func (p *provisioner) takeSnapshot(ctx context.Context, c *snapv1.VolumeSnapshotContent) error {
	if c.Spec.Source.VolumeHandle == nil {
		return nil
	}
	pv, err := p.volumes.Get(*c.Spec.Source.VolumeHandle)
	if apierrors.IsNotFound(err) || (err == nil && !p.ours(pv)) {
		return p.failContent(ctx, c, fmt.Sprintf("source volume %s is not a volume of node %s", *c.Spec.Source.VolumeHandle, p.node))
	} else if err != nil {
		return err
	}
	file := pv.Annotations[annBackingFile]
	dev, err := p.loop.Find(file)
	if err != nil {
		return err
	}
	dst := p.snapshotImage(c.Name)
	start := time.Now()
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return err
	}
	if err := p.images.Snapshot(dev, file, dst); err != nil {
		return p.failContent(ctx, c, fmt.Sprintf("copying the image of %s: %v", pv.Name, err))
	}
	st, err := os.Stat(dst)
	if err != nil {
		return err
	}
	ready, handle, size, now := true, c.Name, st.Size(), time.Now().UnixNano()
	if err := p.setContentStatus(ctx, c.Name, &snapv1.VolumeSnapshotContentStatus{
		SnapshotHandle: &handle, CreationTime: &now, ReadyToUse: &ready, RestoreSize: &size,
	}); err != nil {
		return err
	}
	klog.Infof("snapshot %s of %s: %s (%d MiB) in %s", c.Name, pv.Name, dst, size>>20, time.Since(start).Round(time.Millisecond))
	return nil
}

// failContent records why the snapshot of c could not be taken; the snapshot-controller copies
// it to the VolumeSnapshot's status.error.
func (p *provisioner) failContent(ctx context.Context, c *snapv1.VolumeSnapshotContent, msg string) error {
	ready := false
	if err := p.setContentStatus(ctx, c.Name, &snapv1.VolumeSnapshotContentStatus{
		ReadyToUse: &ready,
		Error:      &snapv1.VolumeSnapshotError{Message: &msg, Time: &metav1.Time{Time: time.Now()}},
	}); err != nil {
		return err
	}
	klog.Warningf("snapshot %s failed: %s", c.Name, msg)
	return nil
}

// setContentStatus writes the status of content name, on its latest version: the
// snapshot-controller adds its finalizer to a new content at the same time, and the copy is not
// to be made again for a conflict.
func (p *provisioner) setContentStatus(ctx context.Context, name string, st *snapv1.VolumeSnapshotContentStatus) error {
	contents := p.snaps.SnapshotV1().VolumeSnapshotContents()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		c, err := contents.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		c.Status = st
		_, err = contents.UpdateStatus(ctx, c, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("status of %s: %w", name, err)
	}
	return nil
}

// deleteContent removes the image of a deleted content (deletionPolicy Delete; Retain keeps
// it), then the finalizers that hold the content.
func (p *provisioner) deleteContent(ctx context.Context, c *snapv1.VolumeSnapshotContent) error {
	if c.Spec.DeletionPolicy == snapv1.VolumeSnapshotContentDelete {
		file := p.snapshotImage(c.Name)
		if c.Status != nil && c.Status.SnapshotHandle != nil {
			file = p.snapshotImage(*c.Status.SnapshotHandle)
		}
		if err := os.Remove(file); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		klog.Infof("deleted snapshot %s: removed %s", c.Name, file)
	}
	if !slices.Contains(c.Finalizers, finalizerSnapshot) && !slices.Contains(c.Finalizers, finalizerContentBound) {
		return nil
	}
	c = c.DeepCopy()
	c.Finalizers = slices.DeleteFunc(c.Finalizers, func(f string) bool {
		return f == finalizerSnapshot || f == finalizerContentBound
	})
	_, err := p.snaps.SnapshotV1().VolumeSnapshotContents().Update(ctx, c, metav1.UpdateOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("finalizers of %s: %w", c.Name, err)
	}
	return nil
}
