// Command loop-provisioner gives the local test cluster storage that behaves like a cloud disk.
//
// It runs as a root process on the node (test/localcluster starts it) and watches
// PersistentVolumeClaims, PersistentVolumes and StorageClasses through informers:
//
//   - A claim of a class whose provisioner is ours, once the scheduler picked its node
//     (WaitForFirstConsumer), gets a sparse file under -disk-dir attached to a loop device and a
//     `local` PersistentVolume whose path is that block device with fsType xfs, pre-bound to the
//     claim. kubelet formats and mounts it. Requests under 300MiB (the XFS minimum) are rounded up.
//   - A bound claim that asks for more than its volume has (classes with allowVolumeExpansion)
//     gets its file grown, the loop device's size refreshed (losetup -c), the volume's capacity
//     raised and the claim marked NodeResizePending, so kubelet grows XFS online (xfs_growfs).
//   - A Released volume with reclaim policy Delete is detached, its file removed, and deleted.
//   - A VolumeSnapshot of one of its volumes whose VolumeSnapshotClass names our driver (the
//     provisioner name) gets its VolumeSnapshotContent, made here as the snapshot-controller
//     makes them for CSI volumes (snapshot.go); the snapshot is a reflink copy of the volume's
//     file under -disk-dir/snapshots (the disk folder is XFS with reflink), recorded in the
//     content's status; a deleted content's image is removed (deletionPolicy Delete) (content.go).
//   - A claim whose dataSource is such a VolumeSnapshot gets a reflink copy of its image, grown
//     to the claim's size, with a fresh file system UUID (restore.go).
package main

import (
	"context"
	"flag"
	"os"
	"os/signal"
	"syscall"
	"time"

	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	snapinformers "github.com/kubernetes-csi/external-snapshotter/client/v8/informers/externalversions"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
)

func main() {
	klog.InitFlags(nil)
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster")
	node := flag.String("node", "", "name of this node (volumes are local to it)")
	name := flag.String("provisioner", "valkey.local/loop-xfs", "provisioner name StorageClasses refer to")
	diskDir := flag.String("disk-dir", "", "folder for the volumes' backing files")
	flag.Parse()
	if *node == "" || *diskDir == "" {
		klog.Exit("-node and -disk-dir are required")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		klog.Exit(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		klog.Exit(err)
	}
	snaps, err := snapclient.NewForConfig(cfg)
	if err != nil {
		klog.Exit(err)
	}
	if err := os.MkdirAll(*diskDir, 0o700); err != nil {
		klog.Exit(err)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()

	cl := clients{
		core: client, snaps: snaps,
		factory:      informers.NewSharedInformerFactory(client, 10*time.Minute),
		snapFactory:  snapinformers.NewSharedInformerFactory(snaps, 10*time.Minute),
		eventsSource: "loop-provisioner-" + *node,
	}
	p := newProvisioner(cl, *name, *node, *diskDir, losetup{}, xfsImages{})
	cl.factory.Start(ctx.Done())
	cl.snapFactory.Start(ctx.Done())
	klog.Infof("provisioner %s for node %s, disks in %s", *name, *node, *diskDir)
	p.Run(ctx)
	cl.factory.Shutdown()
	cl.snapFactory.Shutdown()
}
