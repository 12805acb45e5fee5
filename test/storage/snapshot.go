package main

import (
	"context"
	"fmt"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// Snapshots without CSI. The snapshot-controller (external-snapshotter) binds a dynamically
// provisioned VolumeSnapshot to the VolumeSnapshotContent named snapcontent-<snapshot UID> whose
// volumeSnapshotRef carries the snapshot's UID and whose source is a volumeHandle; it creates that
// content itself only for CSI volumes. For our local volumes this provisioner creates it, and then
// does what the csi-snapshotter sidecar would: takes the snapshot, reports it in the content's
// status, and on deletion removes the image and the content's finalizers.
const (
	// finalizerSnapshot holds a content until its image is removed (or kept, with Retain).
	finalizerSnapshot = "valkey.local/loop-snapshot"
	// finalizerContentBound is the snapshot-controller's finalizer on a bound content, which
	// the csi-snapshotter sidecar removes once the snapshot is deleted; here, this provisioner.
	finalizerContentBound = "snapshot.storage.kubernetes.io/volumesnapshotcontent-bound-protection"
	// annContentNode names the node whose provisioner serves a content (the source volume's).
	annContentNode  = "valkey.local/loop-node"
	snapshotsFolder = "snapshots"
	snapshotGroup   = "snapshot.storage.k8s.io"
)

// contentName is the name the snapshot-controller looks for (its
// GetDynamicSnapshotContentNameForSnapshot).
func contentName(vs *snapv1.VolumeSnapshot) string { return "snapcontent-" + string(vs.UID) }

// syncSnapshot creates the content of a VolumeSnapshot of one of this node's volumes whose class
// names our driver.
func (p *provisioner) syncSnapshot(ctx context.Context, ns, name string) error {
	vs, err := p.snapshots.VolumeSnapshots(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	src := vs.Spec.Source.PersistentVolumeClaimName
	if vs.DeletionTimestamp != nil || src == nil || vs.Spec.VolumeSnapshotClassName == nil {
		return nil // pre-provisioned, or no class yet: the snapshot-controller reports it
	}
	class, err := p.snapClasses.Get(*vs.Spec.VolumeSnapshotClassName)
	if err != nil || class.Driver != p.name {
		return nil
	}
	if _, err := p.contents.Get(contentName(vs)); err == nil {
		return nil
	}
	claim, err := p.claims.PersistentVolumeClaims(ns).Get(*src)
	if err != nil || claim.Spec.VolumeName == "" {
		return nil // the snapshot-controller reports a missing or unbound claim
	}
	pv, err := p.volumes.Get(claim.Spec.VolumeName)
	if err != nil || !p.ours(pv) {
		return nil // another node's volume: its provisioner serves the snapshot
	}
	return p.createContent(ctx, vs, class, pv)
}

// createContent creates the dynamic content of vs, as the snapshot-controller would for a CSI
// volume (its createSnapshotContent), with the volume's name as volume handle.
func (p *provisioner) createContent(ctx context.Context, vs *snapv1.VolumeSnapshot, class *snapv1.VolumeSnapshotClass, pv *corev1.PersistentVolume) error {
	className := class.Name
	handle := pv.Name
	content := &snapv1.VolumeSnapshotContent{
		ObjectMeta: metav1.ObjectMeta{
			Name:        contentName(vs),
			Finalizers:  []string{finalizerSnapshot},
			Annotations: map[string]string{annContentNode: p.node},
		},
		Spec: snapv1.VolumeSnapshotContentSpec{
			VolumeSnapshotRef: corev1.ObjectReference{
				Kind: "VolumeSnapshot", APIVersion: snapshotGroup + "/v1",
				Namespace: vs.Namespace, Name: vs.Name, UID: vs.UID, ResourceVersion: vs.ResourceVersion,
			},
			Source:                  snapv1.VolumeSnapshotContentSource{VolumeHandle: &handle},
			VolumeSnapshotClassName: &className,
			DeletionPolicy:          class.DeletionPolicy,
			Driver:                  class.Driver,
			SourceVolumeMode:        pv.Spec.VolumeMode,
		},
	}
	_, err := p.snaps.SnapshotV1().VolumeSnapshotContents().Create(ctx, content, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	} else if err != nil {
		return fmt.Errorf("create content of %s/%s: %w", vs.Namespace, vs.Name, err)
	}
	klog.Infof("created %s for snapshot %s/%s of %s", content.Name, vs.Namespace, vs.Name, pv.Name)
	return nil
}
