// Package volumecontroller is the volume controller (see docs/contract.md for what it owns):
// one PersistentVolumeClaim per ValkeyNode with persistence, created before the workload,
// expanded online, protected by the valkey.io/pvc-protection finalizer until the node is
// drained, then retained or deleted by its reclaim policy. It reports VolumeReady,
// VolumeSized and status.volume on the ValkeyNode. It snapshots a node's claim for a backup
// (a VolumeSnapshot owned by the ValkeyBackup, reported as SnapshotReady) and creates a
// restored node's claim from its VolumeSnapshot.
package volumecontroller

import (
	"context"
	"fmt"
	"time"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
	"valkey.io/operator/internal/valkeyconf"
)

// Name of the controller: its binary, leader election Lease and metrics prefix.
const Name = "volume-controller"

// Options are the controller's own settings (the binary fills them from flags).
type Options struct {
	// IgnoreStorageClasses: the controller neither reads nor watches StorageClasses, for an
	// install without cluster-wide rights (deploy/namespaced). Claims are then created as
	// asked without checking their class, and the API server decides on expansion.
	IgnoreStorageClasses bool `mapstructure:"ignore-storage-classes"`
	// MaxConcurrentReconciles is the number of ValkeyNodes reconciled at once.
	MaxConcurrentReconciles int `mapstructure:"max-concurrent-reconciles"`
	// UsageInterval is how often each node's /data usage is read from its pod.
	UsageInterval time.Duration `mapstructure:"usage-interval"`
	// ValkeyMetricsPort is the port of valkey-start's /metrics on the nodes' pods.
	ValkeyMetricsPort int `mapstructure:"valkey-metrics-port"`
	// WatchNamespace is the only namespace whose VolumeSnapshots are cached (all when
	// empty): the manager's watch namespace, which the binary copies here.
	WatchNamespace string `mapstructure:"-"`
}

// DefaultOptions are the settings used for zero values.
func DefaultOptions() Options {
	return Options{MaxConcurrentReconciles: 8, UsageInterval: 10 * time.Second, ValkeyMetricsPort: valkeyconf.MetricsPort}
}

// Validate checks the settings.
func (o Options) Validate() error {
	if o.MaxConcurrentReconciles < 0 {
		return fmt.Errorf("max-concurrent-reconciles must not be negative, not %d", o.MaxConcurrentReconciles)
	}
	if o.UsageInterval < 0 || (o.UsageInterval > 0 && o.UsageInterval < time.Second) {
		return fmt.Errorf("usage-interval must be at least 1s, not %s", o.UsageInterval)
	}
	if o.ValkeyMetricsPort < 0 || o.ValkeyMetricsPort > 65535 {
		return fmt.Errorf("valkey-metrics-port must be a port number, not %d", o.ValkeyMetricsPort)
	}
	return nil
}

func (o Options) withDefaults() Options {
	if o.MaxConcurrentReconciles == 0 {
		o.MaxConcurrentReconciles = DefaultOptions().MaxConcurrentReconciles
	}
	if o.UsageInterval == 0 {
		o.UsageInterval = DefaultOptions().UsageInterval
	}
	if o.ValkeyMetricsPort == 0 {
		o.ValkeyMetricsPort = DefaultOptions().ValkeyMetricsPort
	}
	return o
}

// CacheOptions are the label filters and transforms of the controller's caches: only claims
// the operator made (app.kubernetes.io/managed-by=valkey-operator) are cached, and of each
// ValkeyNode only what the controller reads (slimNode).
func CacheOptions() map[client.Object]cache.ByObject {
	return map[client.Object]cache.ByObject{
		&valkeyv1.ValkeyNode{}: {Transform: slimNode},
		&corev1.PersistentVolumeClaim{}: {
			Label: labels.SelectorFromSet(labels.Set{valkeyv1.LabelManagedBy: valkeyv1.ManagedByValue}),
		},
	}
}

// SetupWithManager registers the controller with mgr. The manager's cache must use
// CacheOptions.
func SetupWithManager(mgr ctrl.Manager, opts Options) error {
	if err := opts.Validate(); err != nil {
		return err
	}
	opts = opts.withDefaults()
	if err := snapshotv1.AddToScheme(mgr.GetScheme()); err != nil {
		return fmt.Errorf("register the VolumeSnapshot API: %w", err)
	}
	r := &Reconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Recorder:  mgr.GetEventRecorder(valkeyv1.FieldManagerVolume),
		Options:   opts,
		Status:    status.NewApplier(mgr.GetClient(), valkeyv1.FieldManagerVolume),
		usage:     newUsageStore(),
	}
	registerMetrics(mgr.GetCache(), r.usage)
	poller := newUsagePoller(mgr.GetCache(), r.usage, opts.UsageInterval, opts.ValkeyMetricsPort)
	if err := mgr.Add(poller); err != nil {
		return fmt.Errorf("add the usage poller: %w", err)
	}

	nodeChanged := predicate.Or[client.Object](
		predicate.GenerationChangedPredicate{},
		predicate.AnnotationChangedPredicate{},
		status.DeletionChanged(),
		status.ConditionChanged(valkeyv1.ConditionDrained, valkeyv1.ConditionPaused),
		savedPointChanged(),
	)
	b := ctrl.NewControllerManagedBy(mgr).
		Named("volume").
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles}).
		For(&valkeyv1.ValkeyNode{}, builder.WithPredicates(nodeChanged)).
		Watches(&corev1.PersistentVolumeClaim{}, handler.EnqueueRequestsFromMapFunc(claimToNode)).
		WatchesRawSource(source.Channel(poller.wake, &handler.EnqueueRequestForObject{}))
	if !opts.IgnoreStorageClasses {
		b = b.Watches(&storagev1.StorageClass{}, handler.EnqueueRequestsFromMapFunc(r.classToNodes),
			builder.WithPredicates(classChanged()))
	}
	b, err := r.watchSnapshots(mgr, b)
	if err != nil {
		return err
	}
	err = b.Complete(r)
	if err != nil {
		return fmt.Errorf("build %s: %w", Name, err)
	}
	return nil
}

// claimToNode maps any change of a claim (status included) to the node it is named after.
func claimToNode(_ context.Context, o client.Object) []reconcile.Request {
	node, ok := nodeForClaim(client.ObjectKeyFromObject(o))
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: node}}
}

// classChanged passes StorageClass creation and the updates that matter: the default
// annotation, expansion and binding mode.
func classChanged() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*storagev1.StorageClass)
			n, ok2 := e.ObjectNew.(*storagev1.StorageClass)
			if !ok1 || !ok2 {
				return true
			}
			return allowsExpansion(o) != allowsExpansion(n) || bindsOnFirstConsumer(o) != bindsOnFirstConsumer(n) ||
				isDefaultClass(o) != isDefaultClass(n)
		},
	}
}

// classToNodes maps a StorageClass change to the nodes with persistence that may use it:
// those naming it, and those naming no class (the default may have changed). Like every
// mapping of the controller, it reads the cached nodes in place and changes nothing.
func (r *Reconciler) classToNodes(ctx context.Context, o client.Object) []reconcile.Request {
	var nodes valkeyv1.ValkeyNodeList
	if err := r.List(ctx, &nodes, client.UnsafeDisableDeepCopy); err != nil {
		log.FromContext(ctx).Error(err, "list ValkeyNodes for a StorageClass change", "storageClass", o.GetName())
		return nil
	}
	var reqs []reconcile.Request
	for i := range nodes.Items {
		p := nodes.Items[i].Spec.Persistence
		if p == nil || (p.StorageClassName != nil && *p.StorageClassName != o.GetName()) {
			continue
		}
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&nodes.Items[i])})
	}
	return reqs
}
