package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	snapinformers "github.com/kubernetes-csi/external-snapshotter/client/v8/informers/externalversions"
	snaplisters "github.com/kubernetes-csi/external-snapshotter/client/v8/listers/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

const (
	// minSize is the smallest volume: mkfs.xfs refuses smaller devices.
	minSize = 300 << 20
	// annBackingFile records the file behind a volume's loop device.
	annBackingFile   = "valkey.local/loop-backing-file"
	annProvisionedBy = "pv.kubernetes.io/provisioned-by"
	annSelectedNode  = "volume.kubernetes.io/selected-node"
	labelHostname    = "kubernetes.io/hostname"
	fsType           = "xfs"
)

// roundSize is the size of the backing file for a request of n bytes: at least minSize,
// rounded up to a whole MiB.
func roundSize(n int64) int64 {
	if n < minSize {
		return minSize
	}
	const mib = 1 << 20
	return (n + mib - 1) / mib * mib
}

type provisioner struct {
	client   kubernetes.Interface
	snaps    snapclient.Interface
	recorder record.EventRecorder
	name     string
	node     string
	diskDir  string
	loop     loopDevices
	images   imageOps

	claims      corelisters.PersistentVolumeClaimLister
	volumes     corelisters.PersistentVolumeLister
	classes     storagelisters.StorageClassLister
	snapshots   snaplisters.VolumeSnapshotLister
	contents    snaplisters.VolumeSnapshotContentLister
	snapClasses snaplisters.VolumeSnapshotClassLister
	synced      []cache.InformerSynced
	queue       workqueue.TypedRateLimitingInterface[string]
}

// clients are the API clients and informer factories of a provisioner.
type clients struct {
	core         kubernetes.Interface
	snaps        snapclient.Interface
	factory      informers.SharedInformerFactory
	snapFactory  snapinformers.SharedInformerFactory
	eventsSource string
}

func newProvisioner(cl clients, name, node, diskDir string, loop loopDevices, images imageOps) *provisioner {
	client, factory := cl.core, cl.factory
	claims := factory.Core().V1().PersistentVolumeClaims()
	volumes := factory.Core().V1().PersistentVolumes()
	classes := factory.Storage().V1().StorageClasses()
	p := &provisioner{
		client: client, snaps: cl.snaps, name: name, node: node, diskDir: diskDir, loop: loop, images: images,
		recorder: newRecorder(client, cl.eventsSource),
		claims:   claims.Lister(),
		volumes:  volumes.Lister(),
		classes:  classes.Lister(),
		synced:   []cache.InformerSynced{claims.Informer().HasSynced, volumes.Informer().HasSynced, classes.Informer().HasSynced},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](200*time.Millisecond, 30*time.Second),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "loop-provisioner"}),
	}
	enqueueClaim := func(obj any) {
		if c, ok := obj.(*corev1.PersistentVolumeClaim); ok {
			p.queue.Add("claim/" + c.Namespace + "/" + c.Name)
		}
	}
	enqueueVolume := func(obj any) {
		if v, ok := obj.(*corev1.PersistentVolume); ok {
			p.queue.Add("volume/" + v.Name)
			if r := v.Spec.ClaimRef; r != nil {
				p.queue.Add("claim/" + r.Namespace + "/" + r.Name)
			}
		}
	}
	_, _ = claims.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueueClaim,
		UpdateFunc: func(_, obj any) { enqueueClaim(obj) },
	})
	_, _ = volumes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueueVolume,
		UpdateFunc: func(_, obj any) { enqueueVolume(obj) },
	})
	// A class created after its claims: look at the claims again.
	_, _ = classes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) {
			all, _ := p.claims.List(labels.Everything())
			for _, c := range all {
				enqueueClaim(c)
			}
		},
	})
	p.watchSnapshots(cl.snapFactory)
	return p
}

// Run processes the queue until ctx ends. One worker: loop-device operations are serialized.
func (p *provisioner) Run(ctx context.Context) {
	defer p.queue.ShutDown()
	if !cache.WaitForCacheSync(ctx.Done(), p.synced...) {
		return
	}
	go func() {
		<-ctx.Done()
		p.queue.ShutDown()
	}()
	for p.processNext(ctx) {
	}
}

func (p *provisioner) processNext(ctx context.Context) bool {
	key, quit := p.queue.Get()
	if quit {
		return false
	}
	defer p.queue.Done(key)
	var err error
	if rest, ok := strings.CutPrefix(key, "claim/"); ok {
		ns, name, _ := strings.Cut(rest, "/")
		err = p.syncClaim(ctx, ns, name)
	} else if name, ok := strings.CutPrefix(key, "volume/"); ok {
		err = p.syncVolume(ctx, name)
	} else if rest, ok := strings.CutPrefix(key, "snapshot/"); ok {
		ns, name, _ := strings.Cut(rest, "/")
		err = p.syncSnapshot(ctx, ns, name)
	} else if name, ok := strings.CutPrefix(key, "content/"); ok {
		err = p.syncContent(ctx, name)
	}
	if err != nil {
		klog.Errorf("%s: %v (retrying)", key, err)
		p.queue.AddRateLimited(key)
		return true
	}
	p.queue.Forget(key)
	return true
}

func (p *provisioner) classOf(c *corev1.PersistentVolumeClaim) *storagev1.StorageClass {
	if c.Spec.StorageClassName == nil || *c.Spec.StorageClassName == "" {
		return nil
	}
	sc, err := p.classes.Get(*c.Spec.StorageClassName)
	if err != nil || sc.Provisioner != p.name {
		return nil
	}
	return sc
}

// ours tells whether v was provisioned by this provisioner for its node: with one provisioner
// per node, each grows and deletes only the volumes whose loop devices are on its node.
func (p *provisioner) ours(v *corev1.PersistentVolume) bool {
	return v.Annotations[annProvisionedBy] == p.name && v.Annotations[annBackingFile] != "" && v.Spec.Local != nil &&
		volumeNode(v) == p.node
}

// volumeNode is the node a local volume's affinity names ("" when it names none).
func volumeNode(v *corev1.PersistentVolume) string {
	if v.Spec.NodeAffinity == nil || v.Spec.NodeAffinity.Required == nil {
		return ""
	}
	for _, t := range v.Spec.NodeAffinity.Required.NodeSelectorTerms {
		for _, e := range t.MatchExpressions {
			if e.Key == labelHostname && e.Operator == corev1.NodeSelectorOpIn && len(e.Values) == 1 {
				return e.Values[0]
			}
		}
	}
	return ""
}

func (p *provisioner) syncClaim(ctx context.Context, ns, name string) error {
	c, err := p.claims.PersistentVolumeClaims(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	sc := p.classOf(c)
	if sc == nil || c.DeletionTimestamp != nil {
		return nil
	}
	if c.Spec.VolumeName == "" {
		return p.provision(ctx, c, sc)
	}
	return p.expand(ctx, c, sc)
}

func (p *provisioner) provision(ctx context.Context, c *corev1.PersistentVolumeClaim, sc *storagev1.StorageClass) error {
	if c.Status.Phase != corev1.ClaimPending {
		return nil
	}
	node := c.Annotations[annSelectedNode]
	if node == "" {
		if sc.VolumeBindingMode != nil && *sc.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer {
			return nil // the scheduler has not picked a node yet
		}
		node = p.node
	}
	if node != p.node {
		return nil
	}
	pvName := "pvc-" + string(c.UID)
	if _, err := p.volumes.Get(pvName); err == nil {
		return nil
	}
	req := c.Spec.Resources.Requests[corev1.ResourceStorage]
	size := roundSize(req.Value())
	file := filepath.Join(p.diskDir, pvName+".img")
	dev, ok, err := p.makeVolume(c, file, size)
	if !ok || err != nil {
		return err
	}
	pv := newVolume(c, sc, pvName, node, file, dev, size)
	pv.Annotations[annProvisionedBy] = p.name
	if _, err := p.client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		p.discard(dev, file)
		return fmt.Errorf("create volume %s: %w", pvName, err)
	}
	klog.Infof("provisioned %s for %s/%s: %s on %s (%d MiB)", pvName, c.Namespace, c.Name, file, dev, size>>20)
	return nil
}

// makeVolume makes the backing file of claim c, empty or a copy of the snapshot it restores
// from, and attaches it. ok is false when the claim waits for its snapshot or cannot be restored.
func (p *provisioner) makeVolume(c *corev1.PersistentVolumeClaim, file string, size int64) (dev string, ok bool, err error) {
	src := snapshotSource(c)
	if src == "" {
		if err := ensureFile(file, size); err != nil {
			return "", false, err
		}
		dev, err := p.loop.Attach(file)
		if err != nil {
			_ = os.Remove(file)
			return "", false, err
		}
		return dev, true, nil
	}
	// Made by an earlier pass whose volume the informer has not shown yet (a failed pass
	// detaches and removes what it made): copying again would replace the file under its device.
	if dev, err := p.loop.Find(file); err != nil || dev != "" {
		return dev, err == nil, err
	}
	image, srcSize, ok := p.restoreSource(c, src, size)
	if !ok {
		return "", false, nil
	}
	start := time.Now()
	dev, err = p.restoreImage(image, file, srcSize, size, func() (string, error) { return p.loop.Attach(file) })
	if err != nil {
		p.recorder.Eventf(c, corev1.EventTypeWarning, reasonRestoreFailed, "restoring snapshot %s: %v", src, err)
		p.discard(dev, file)
		return "", false, err
	}
	klog.Infof("%s/%s: restored snapshot %s (%d MiB) into %d MiB in %s", c.Namespace, c.Name, src, srcSize>>20, size>>20,
		time.Since(start).Round(time.Millisecond))
	return dev, true, nil
}

// discard detaches dev (when attached) and removes file, after a failed provisioning.
func (p *provisioner) discard(dev, file string) {
	if dev != "" {
		_ = p.loop.Detach(dev)
	}
	_ = os.Remove(file)
}

// newVolume is the local volume of claim c on node: the loop device dev over file, size bytes.
func newVolume(c *corev1.PersistentVolumeClaim, sc *storagev1.StorageClass, pvName, node, file, dev string, size int64) *corev1.PersistentVolume {
	reclaim := corev1.PersistentVolumeReclaimDelete
	if sc.ReclaimPolicy != nil {
		reclaim = *sc.ReclaimPolicy
	}
	mode := corev1.PersistentVolumeFilesystem
	if c.Spec.VolumeMode != nil {
		mode = *c.Spec.VolumeMode
	}
	local := &corev1.LocalVolumeSource{Path: dev}
	if mode == corev1.PersistentVolumeFilesystem {
		fs := fsType
		local.FSType = &fs
	}
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        pvName,
			Annotations: map[string]string{annBackingFile: file},
		},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: *resource.NewQuantity(size, resource.BinarySI)},
			AccessModes:                   c.Spec.AccessModes,
			PersistentVolumeReclaimPolicy: reclaim,
			StorageClassName:              sc.Name,
			MountOptions:                  sc.MountOptions,
			VolumeMode:                    &mode,
			ClaimRef: &corev1.ObjectReference{
				Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: c.Namespace, Name: c.Name, UID: c.UID,
			},
			PersistentVolumeSource: corev1.PersistentVolumeSource{Local: local},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key: labelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{node},
				}}}},
			}},
		},
	}
}

func (p *provisioner) expand(ctx context.Context, c *corev1.PersistentVolumeClaim, sc *storagev1.StorageClass) error {
	pv, err := p.volumes.Get(c.Spec.VolumeName)
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	if !p.ours(pv) || c.Status.Phase != corev1.ClaimBound {
		return nil
	}
	want := c.Spec.Resources.Requests[corev1.ResourceStorage]
	have := pv.Spec.Capacity[corev1.ResourceStorage]
	if want.Cmp(have) > 0 {
		if sc.AllowVolumeExpansion == nil || !*sc.AllowVolumeExpansion {
			klog.Warningf("%s/%s asks for %s but class %s does not allow expansion", c.Namespace, c.Name, want.String(), sc.Name)
			return nil
		}
		if have, err = p.growVolume(ctx, c, pv, want); err != nil {
			return err
		}
	}
	// The device has grown: hand over to kubelet, which grows the filesystem while mounted.
	cur := c.Status.Capacity[corev1.ResourceStorage]
	if cur.Cmp(have) >= 0 {
		return nil
	}
	// Once allocated, kubelet owns the resize status (NodeResizeInProgress, failures, done):
	// marking again would race with its own updates.
	alloc := c.Status.AllocatedResources[corev1.ResourceStorage]
	if alloc.Cmp(want) >= 0 {
		return nil
	}
	return p.markNodeResize(ctx, c, want, have)
}

// growVolume grows the backing file and loop device of pv to want (rounded up) and records the
// new capacity on the volume, which it returns.
func (p *provisioner) growVolume(ctx context.Context, c *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume, want resource.Quantity) (resource.Quantity, error) {
	size := roundSize(want.Value())
	file := pv.Annotations[annBackingFile]
	dev, err := p.loop.Find(file)
	if err != nil {
		return resource.Quantity{}, err
	}
	if dev != pv.Spec.Local.Path {
		return resource.Quantity{}, fmt.Errorf("volume %s: %s is backed by %q, not %s", pv.Name, pv.Spec.Local.Path, dev, file)
	}
	if err := ensureFile(file, size); err != nil {
		return resource.Quantity{}, err
	}
	if err := p.loop.Refresh(dev); err != nil {
		return resource.Quantity{}, err
	}
	grown := pv.DeepCopy()
	grown.Spec.Capacity[corev1.ResourceStorage] = *resource.NewQuantity(size, resource.BinarySI)
	updated, err := p.client.CoreV1().PersistentVolumes().Update(ctx, grown, metav1.UpdateOptions{})
	if err != nil {
		return resource.Quantity{}, fmt.Errorf("grow volume %s: %w", pv.Name, err)
	}
	klog.Infof("grew %s (%s/%s) to %d MiB on %s", pv.Name, c.Namespace, c.Name, size>>20, dev)
	return updated.Spec.Capacity[corev1.ResourceStorage], nil
}

// markNodeResize records want as allocated and asks kubelet to grow the file system of the
// claim's volume (FileSystemResizePending), the way an external resizer hands over.
func (p *provisioner) markNodeResize(ctx context.Context, c *corev1.PersistentVolumeClaim, want, have resource.Quantity) error {
	c = c.DeepCopy()
	if c.Status.AllocatedResources == nil {
		c.Status.AllocatedResources = corev1.ResourceList{}
	}
	c.Status.AllocatedResources[corev1.ResourceStorage] = want
	if c.Status.AllocatedResourceStatuses == nil {
		c.Status.AllocatedResourceStatuses = map[corev1.ResourceName]corev1.ClaimResourceStatus{}
	}
	c.Status.AllocatedResourceStatuses[corev1.ResourceStorage] = corev1.PersistentVolumeClaimNodeResizePending
	c.Status.Conditions = slices.DeleteFunc(c.Status.Conditions, func(cond corev1.PersistentVolumeClaimCondition) bool {
		return cond.Type == corev1.PersistentVolumeClaimResizing || cond.Type == corev1.PersistentVolumeClaimFileSystemResizePending
	})
	c.Status.Conditions = append(c.Status.Conditions, corev1.PersistentVolumeClaimCondition{
		Type:               corev1.PersistentVolumeClaimFileSystemResizePending,
		Status:             corev1.ConditionTrue,
		LastTransitionTime: metav1.Now(),
		Message:            "Waiting for the node to grow the file system of the volume.",
	})
	if _, err := p.client.CoreV1().PersistentVolumeClaims(c.Namespace).UpdateStatus(ctx, c, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("mark %s/%s for node resize: %w", c.Namespace, c.Name, err)
	}
	klog.Infof("%s/%s: device grown to %s, waiting for kubelet to grow the file system", c.Namespace, c.Name, have.String())
	return nil
}

func (p *provisioner) syncVolume(ctx context.Context, name string) error {
	pv, err := p.volumes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	if !p.ours(pv) || pv.DeletionTimestamp != nil || pv.Status.Phase != corev1.VolumeReleased ||
		pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
		return nil
	}
	file := pv.Annotations[annBackingFile]
	dev, err := p.loop.Find(file)
	if err != nil {
		return err
	}
	if dev != "" {
		if err := p.loop.Detach(dev); err != nil {
			return err
		}
	}
	if err := os.Remove(file); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	err = p.client.CoreV1().PersistentVolumes().Delete(ctx, name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &pv.UID},
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete volume %s: %w", name, err)
	}
	klog.Infof("deleted %s: detached %s, removed %s", name, dev, file)
	return nil
}
