package volumecontroller

import (
	"fmt"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// snapshotGroupVersion is the VolumeSnapshot API the controller uses (external-snapshotter v8).
var snapshotGroupVersion = snapshotv1.SchemeGroupVersion

// snapshotAPIMissing is the message of every snapshot or restore request while the
// VolumeSnapshot API is not served.
const snapshotAPIMissing = "the VolumeSnapshot API snapshot.storage.k8s.io/v1 is not installed; " +
	"install the external-snapshotter CRDs and snapshot-controller, then restart the volume controller"

// snapshotAPIServed tells whether the API server serves VolumeSnapshots of
// snapshot.storage.k8s.io/valkeyv1. It is asked once, at start: the CRDs installed later are
// used after a restart.
func snapshotAPIServed(mapper meta.RESTMapper) (bool, error) {
	gk := schema.GroupKind{Group: snapshotGroupVersion.Group, Kind: "VolumeSnapshot"}
	if _, err := mapper.RESTMapping(gk, snapshotGroupVersion.Version); err != nil {
		if meta.IsNoMatchError(err) {
			return false, nil
		}
		return false, fmt.Errorf("look up %s: %w", gk, err)
	}
	return true, nil
}

// snapshotCache is the controller's own cache of VolumeSnapshots (only the operator's,
// by label) and VolumeSnapshotClasses. It is separate from the manager's cache, whose
// per-type filters must name types the API server serves: this one exists only when the
// VolumeSnapshot API does. GetCache puts it among the manager's caches, which sync before
// any controller starts.
type snapshotCache struct{ cache.Cache }

func (c snapshotCache) GetCache() cache.Cache { return c.Cache }

// newSnapshotCache builds the snapshot cache on the manager's scheme, mapper and HTTP
// client, in the namespace the controller watches (all when empty), and adds it to mgr.
func newSnapshotCache(mgr ctrl.Manager, namespace string) (cache.Cache, error) {
	opts := cache.Options{
		HTTPClient: mgr.GetHTTPClient(),
		Scheme:     mgr.GetScheme(),
		Mapper:     mgr.GetRESTMapper(),
		ByObject: map[client.Object]cache.ByObject{
			&snapshotv1.VolumeSnapshot{}: {
				Label: labels.SelectorFromSet(labels.Set{valkeyv1.LabelManagedBy: valkeyv1.ManagedByValue}),
			},
		},
		DefaultTransform: cache.TransformStripManagedFields(),
	}
	if namespace != "" {
		opts.DefaultNamespaces = map[string]cache.Config{namespace: {}}
	}
	c, err := cache.New(mgr.GetConfig(), opts)
	if err != nil {
		return nil, fmt.Errorf("build the VolumeSnapshot cache: %w", err)
	}
	if err := mgr.Add(snapshotCache{c}); err != nil {
		return nil, fmt.Errorf("add the VolumeSnapshot cache: %w", err)
	}
	return c, nil
}

// watchSnapshots sets r.Snapshots and adds the VolumeSnapshot and VolumeSnapshotClass
// watches when the API server serves VolumeSnapshots; without them the controller runs as
// before, and refuses snapshot and restore requests with a message saying why.
func (r *Reconciler) watchSnapshots(mgr ctrl.Manager, b *builder.Builder) (*builder.Builder, error) {
	served, err := snapshotAPIServed(mgr.GetRESTMapper())
	if err != nil {
		return nil, err
	}
	if !served {
		mgr.GetLogger().WithName(Name).Info("VolumeSnapshots are not served: backups and restores are refused", "reason", snapshotAPIMissing)
		return b, nil
	}
	c, err := newSnapshotCache(mgr, r.Options.WatchNamespace)
	if err != nil {
		return nil, err
	}
	r.Snapshots = c
	b = b.WatchesRawSource(source.Kind(c, client.Object(&snapshotv1.VolumeSnapshot{}),
		handler.EnqueueRequestsFromMapFunc(r.snapshotToNodes), snapshotChanged()))
	if !r.Options.IgnoreStorageClasses {
		b = b.WatchesRawSource(source.Kind(c, client.Object(&snapshotv1.VolumeSnapshotClass{}),
			handler.EnqueueRequestsFromMapFunc(r.snapshotClassToNodes)))
	}
	return b, nil
}
