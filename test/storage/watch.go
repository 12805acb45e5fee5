package main

import (
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	snapinformers "github.com/kubernetes-csi/external-snapshotter/client/v8/informers/externalversions"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
)

// watchSnapshots queues the VolumeSnapshots and contents the provisioner serves, and the claims
// that restore from a snapshot whenever that snapshot changes (they wait until it is ready).
func (p *provisioner) watchSnapshots(factory snapinformers.SharedInformerFactory) {
	snapshots := factory.Snapshot().V1().VolumeSnapshots()
	contents := factory.Snapshot().V1().VolumeSnapshotContents()
	classes := factory.Snapshot().V1().VolumeSnapshotClasses()
	p.snapshots, p.contents, p.snapClasses = snapshots.Lister(), contents.Lister(), classes.Lister()
	p.synced = append(p.synced, snapshots.Informer().HasSynced, contents.Informer().HasSynced, classes.Informer().HasSynced)
	onSnapshot := func(obj any) {
		vs, ok := obj.(*snapv1.VolumeSnapshot)
		if !ok {
			return
		}
		p.queue.Add("snapshot/" + vs.Namespace + "/" + vs.Name)
		claims, _ := p.claims.PersistentVolumeClaims(vs.Namespace).List(labels.Everything())
		for _, c := range claims {
			if c.Spec.VolumeName == "" && snapshotSource(c) == vs.Name {
				p.queue.Add("claim/" + c.Namespace + "/" + c.Name)
			}
		}
	}
	onContent := func(obj any) {
		if c, ok := obj.(*snapv1.VolumeSnapshotContent); ok {
			p.queue.Add("content/" + c.Name)
		}
	}
	_, _ = snapshots.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    onSnapshot,
		UpdateFunc: func(_, obj any) { onSnapshot(obj) },
	})
	_, _ = contents.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    onContent,
		UpdateFunc: func(_, obj any) { onContent(obj) },
	})
	// A class created after its snapshots: look at them again.
	_, _ = classes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) {
			all, _ := p.snapshots.List(labels.Everything())
			for _, vs := range all {
				onSnapshot(vs)
			}
		},
	})
}

// newRecorder records events (on claims) as source.
func newRecorder(client kubernetes.Interface, source string) record.EventRecorder {
	b := record.NewBroadcaster()
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	return b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: source})
}
