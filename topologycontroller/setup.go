// Package topologycontroller is the topology controller (see docs/contract.md for what it
// owns and docs/architecture.md for its parts): it fans a ValkeyCluster out into ValkeyNodes,
// forms and repairs the Valkey cluster from the pod IPs the workload controller reports
// (MEET, slots, REPLICATE, FORGET), moves slots when the cluster scales, approves pod rolls
// one node at a time after failing primaries over, reports Drained while a node is deleted,
// and runs backups, restores and backup schedules.
//
// Everything is read again each round from the API server and from Valkey, except six
// in-memory records, each owned by the concern that keeps it and each only a hint that a
// restarted controller rebuilds or does without: the backoff of slots whose keys could not
// move (package migration), the rounds in a row a cluster was still converging
// (convergeBook), the failovers under way or backing off (package failover), the form each
// server lists its users in (package access), the BGSAVEs of backups under way (package
// backup) and the live config each server was given (liveBook).
//
// The concerns that stand on their own are packages beside it: round (what one reconcile
// observes, the connections to the servers), access (passwords, users, ACL), servertls (the
// servers' TLS; certs: the certificate arithmetic), membership (meet, replicate, forget,
// drain, scale-in), migration (slot moves), failover (failovers and takeovers), roll (roll
// approvals), backup (backups and restores), exposure (Services, NetworkPolicy,
// PodDisruptionBudgets), schedule (backup schedules) and planner (the pure planning: which
// slots move where, the roll order). This package keeps setup, the phase list
// (reconciler.go), fan-out, live config, pause and the status.
package topologycontroller

import (
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
	"valkey.io/operator/topologycontroller/exposure"
	"valkey.io/operator/topologycontroller/round"
	"valkey.io/operator/topologycontroller/serverwatch"
)

// Name of the controller: its binary, leader election Lease and metrics prefix.
const Name = "topology-controller"

// Options are the controller's own settings (the binary fills them from flags).
type Options struct {
	// ValkeyPort is the port every Valkey server listens on at its pod IP.
	ValkeyPort int `mapstructure:"valkey-port"`
	// DialTimeout bounds connecting to a Valkey server.
	DialTimeout time.Duration `mapstructure:"valkey-dial-timeout"`
	// CommandTimeout bounds one Valkey command (MIGRATE batches included).
	CommandTimeout time.Duration `mapstructure:"valkey-command-timeout"`
	// MigrationBatchSize is the number of keys one MIGRATE moves.
	MigrationBatchSize int `mapstructure:"migration-batch-size"`
	// MigrationSlotsPerReconcile bounds the slots moved by one reconcile before status is
	// reported and the work continues in the next one.
	MigrationSlotsPerReconcile int `mapstructure:"migration-slots-per-reconcile"`
	// MigrationMode is how slots move: MigrationAuto (atomically where both servers can,
	// else key by key) or MigrationKeys (always key by key).
	MigrationMode string `mapstructure:"migration-mode"`
	// FailoverTimeout bounds waiting for a replica to take over after CLUSTER FAILOVER.
	FailoverTimeout time.Duration `mapstructure:"failover-timeout"`
	// FailoverBackoff is the wait before a failover that did not complete is tried again;
	// it doubles with each failure in a row, up to FailoverBackoffMax.
	FailoverBackoff    time.Duration `mapstructure:"failover-backoff"`
	FailoverBackoffMax time.Duration `mapstructure:"failover-backoff-max"`
	// BackupCatchUpTimeout bounds the wait for the replica chosen for a backup to reach its
	// primary's offset at the saved point; past it the primary is saved instead.
	BackupCatchUpTimeout time.Duration `mapstructure:"backup-catch-up-timeout"`
	// BackupCutTimeout bounds the wait, after a backup's last shard is saved, for every
	// shard's VolumeSnapshot to be cut: slot moves are held meanwhile, so past it the
	// backup fails (SnapshotTimeout) and they go on.
	BackupCutTimeout time.Duration `mapstructure:"backup-cut-timeout"`
	// ResyncPeriod is how often a settled cluster is checked again (Valkey is not a watch
	// source: a node failing over on its own is only seen by looking).
	ResyncPeriod time.Duration `mapstructure:"resync-period"`
	// ServerWatchInterval is how often one server of each cluster is asked for CLUSTER
	// NODES between rounds: a change wakes the cluster's reconcile (see serverwatch), so
	// that its status follows a failover, a partition or a server back within about that.
	ServerWatchInterval time.Duration `mapstructure:"server-watch-interval"`
	// MaxConcurrentReconciles is the number of clusters reconciled at once.
	MaxConcurrentReconciles int `mapstructure:"max-concurrent-reconciles"`
	// OperatorNamespace is the namespace the controller runs in: every cluster's
	// NetworkPolicy admits it to both ports (none when empty).
	OperatorNamespace string `mapstructure:"operator-namespace"`
	// ClusterDomain is the Kubernetes cluster's DNS domain, in the names generated
	// certificates cover (<service>.<namespace>.svc.<domain>).
	ClusterDomain string `mapstructure:"cluster-domain"`
	// PartitionOptions shard the clusters among active replicas (partitions.go).
	PartitionOptions `mapstructure:",squash"`
	// Middleware, when set, wraps each reconciler inside the partition guard: it sees only
	// the reconciles that run (metrics, tests). name is the controller's.
	Middleware func(name string, r reconcile.Reconciler) reconcile.Reconciler `mapstructure:"-"`
}

// Migration modes (Options.MigrationMode).
const (
	MigrationAuto = "auto"
	MigrationKeys = "keys"
)

// DefaultOptions are the defaults of every setting.
func DefaultOptions() Options {
	return Options{
		ValkeyPort:                 6379,
		DialTimeout:                2 * time.Second,
		CommandTimeout:             10 * time.Second,
		MigrationBatchSize:         100,
		MigrationSlotsPerReconcile: 256,
		MigrationMode:              MigrationAuto,
		FailoverTimeout:            30 * time.Second,
		FailoverBackoff:            10 * time.Second,
		FailoverBackoffMax:         5 * time.Minute,
		BackupCatchUpTimeout:       30 * time.Second,
		BackupCutTimeout:           10 * time.Minute,
		ResyncPeriod:               30 * time.Second,
		ServerWatchInterval:        time.Second,
		MaxConcurrentReconciles:    4,
		ClusterDomain:              "cluster.local",
		PartitionOptions: PartitionOptions{
			Partitions:             8,
			PartitionLeaseDuration: 15 * time.Second,
			PartitionRenewDeadline: 10 * time.Second,
			PartitionRetryPeriod:   2 * time.Second,
		},
	}
}

// withDefaults fills unset settings with their defaults.
func (o Options) withDefaults() Options {
	d := DefaultOptions()
	orDefault(&o.ValkeyPort, d.ValkeyPort)
	orDefault(&o.DialTimeout, d.DialTimeout)
	orDefault(&o.CommandTimeout, d.CommandTimeout)
	orDefault(&o.MigrationBatchSize, d.MigrationBatchSize)
	orDefault(&o.MigrationSlotsPerReconcile, d.MigrationSlotsPerReconcile)
	orDefault(&o.MigrationMode, d.MigrationMode)
	orDefault(&o.ClusterDomain, d.ClusterDomain)
	orDefault(&o.FailoverTimeout, d.FailoverTimeout)
	orDefault(&o.FailoverBackoff, d.FailoverBackoff)
	orDefault(&o.FailoverBackoffMax, d.FailoverBackoffMax)
	orDefault(&o.ResyncPeriod, d.ResyncPeriod)
	orDefault(&o.ServerWatchInterval, d.ServerWatchInterval)
	orDefault(&o.BackupCatchUpTimeout, d.BackupCatchUpTimeout)
	orDefault(&o.BackupCutTimeout, d.BackupCutTimeout)
	orDefault(&o.MaxConcurrentReconciles, d.MaxConcurrentReconciles)
	// Partitions stays as set: 0 (the zero value) turns sharding off.
	orDefault(&o.PartitionLeaseDuration, d.PartitionLeaseDuration)
	orDefault(&o.PartitionRenewDeadline, d.PartitionRenewDeadline)
	orDefault(&o.PartitionRetryPeriod, d.PartitionRetryPeriod)
	return o
}

// orDefault sets *v to d when it is the zero value.
func orDefault[T comparable](v *T, d T) {
	var zero T
	if *v == zero {
		*v = d
	}
}

// Validate checks the settings.
func (o Options) Validate() error {
	var errs []error
	if o.ValkeyPort < 0 || o.ValkeyPort > 65535-10000 {
		errs = append(errs, fmt.Errorf("valkey-port %d out of range (its cluster bus port is +10000)", o.ValkeyPort))
	}
	for name, d := range map[string]time.Duration{"valkey-dial-timeout": o.DialTimeout, "valkey-command-timeout": o.CommandTimeout, "failover-timeout": o.FailoverTimeout,
		"failover-backoff": o.FailoverBackoff, "failover-backoff-max": o.FailoverBackoffMax, "resync-period": o.ResyncPeriod,
		"server-watch-interval": o.ServerWatchInterval} {
		if d < 0 {
			errs = append(errs, fmt.Errorf("%s must not be negative", name))
		}
	}
	if o.MigrationBatchSize < 0 || o.MigrationSlotsPerReconcile < 0 || o.MaxConcurrentReconciles < 0 {
		errs = append(errs, errors.New("migration-batch-size, migration-slots-per-reconcile and max-concurrent-reconciles must not be negative"))
	}
	if o.MigrationMode != "" && o.MigrationMode != MigrationAuto && o.MigrationMode != MigrationKeys {
		errs = append(errs, fmt.Errorf("migration-mode must be %s or %s, not %q", MigrationAuto, MigrationKeys, o.MigrationMode))
	}
	if o.Partitions < 0 {
		errs = append(errs, errors.New("partitions must not be negative"))
	}
	return errors.Join(errs...)
}

// CacheOptions are the filters of the controller's caches. No Secret is cached or watched:
// a cache of Secrets, even one filtered by label, needs the right to list and watch Secrets
// in every namespace. The generated Secret and a user's are both read by a direct get when
// a cluster is reconciled, so a deleted password Secret is seen at the next reconcile (at
// the latest after resync-period). Only the PodDisruptionBudgets, NetworkPolicies and
// Services the operator makes are cached.
func CacheOptions() map[client.Object]cache.ByObject {
	ours := cache.ByObject{Label: labels.SelectorFromSet(labels.Set{valkeyv1.LabelManagedBy: valkeyv1.ManagedByValue})}
	return map[client.Object]cache.ByObject{
		&policyv1.PodDisruptionBudget{}: ours,
		&networkingv1.NetworkPolicy{}:   ours,
		&corev1.Service{}:               ours,
	}
}

// +kubebuilder:rbac:groups=valkey.io,resources=valkeyclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=valkey.io,resources=valkeyclusters/status,verbs=get;patch
// +kubebuilder:rbac:groups=valkey.io,resources=valkeynodes,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=valkey.io,resources=valkeynodes/status,verbs=get;patch
// Secrets: get, create and update (generated certificates are renewed in place), never
// list or watch (see CacheOptions).
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;create;update
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// Leader election and partitions: their Leases are in the operator's namespace only, by the
// Role in deploy/topology-controller/rbac/bindings.yaml (no cluster-wide lease rights).

// SetupWithManager registers the controller with mgr.
func SetupWithManager(mgr ctrl.Manager, opts Options) error {
	opts = opts.withDefaults()
	if err := opts.Validate(); err != nil {
		return err
	}
	r := &Reconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Recorder:  mgr.GetEventRecorder(Name),
		Options:   opts,
		Status:    status.NewApplier(mgr.GetClient(), valkeyv1.FieldManagerTopology),
	}
	r.setUpConcerns()
	// The watcher's dial and command timeouts are its interval: a server that does not
	// answer within it is passed over for the next one.
	r.watch = serverwatch.New(opts.ServerWatchInterval, 3*opts.ResyncPeriod, opts.ServerWatchInterval, opts.ServerWatchInterval)
	if err := mgr.Add(r.watch); err != nil {
		return fmt.Errorf("add the server watcher: %w", err)
	}
	shards, err := newPartitioned(mgr, opts)
	if err != nil {
		return fmt.Errorf("set up partitions: %w", err)
	}
	b := ctrl.NewControllerManagedBy(mgr).WatchesRawSource(r.watch.Source())
	if shards != nil {
		b = b.WatchesRawSource(shards.set.Source(shards.clustersOf))
	}
	if err := b.
		Named("topology").
		For(&valkeyv1.ValkeyCluster{}, builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, pauseChanged()))).
		Owns(&valkeyv1.ValkeyNode{}, builder.WithPredicates(nodeChanged())).
		Owns(&policyv1.PodDisruptionBudget{}, builder.WithPredicates(changedByOthers())).
		Owns(&networkingv1.NetworkPolicy{}, builder.WithPredicates(changedByOthers())).
		Owns(&corev1.Service{}, builder.WithPredicates(exposure.ServiceChanged())).
		Watches(&valkeyv1.ValkeyBackup{}, handler.EnqueueRequestsFromMapFunc(r.clustersOfBackup), builder.WithPredicates(backupPhaseChanged())).
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles}).
		Complete(shards.guardClusters(opts.wrap("topology", r))); err != nil {
		return fmt.Errorf("set up ValkeyCluster controller: %w", err)
	}
	nr := &outsideReconciler{Client: mgr.GetClient(), Status: r.Status}
	nb := ctrl.NewControllerManagedBy(mgr)
	if shards != nil {
		nb = nb.WatchesRawSource(shards.set.Source(shards.nodesOf))
	}
	if err := nb.
		Named("topology-outside-cluster").
		For(&valkeyv1.ValkeyNode{}, builder.WithPredicates(nodeChanged())).
		Watches(&valkeyv1.ValkeyCluster{}, handler.EnqueueRequestsFromMapFunc(nr.nodesOfCluster)).
		Complete(shards.guardNodes(opts.wrap("topology-outside-cluster", nr))); err != nil {
		return fmt.Errorf("set up ValkeyNode controller: %w", err)
	}
	collector.set(shards.collectorSource(mgr))
	return setupBackups(mgr, r, shards)
}

// wrap counts r's errors (valkey_topology_reconcile_errors_total) and applies the
// Middleware.
func (o Options) wrap(name string, r reconcile.Reconciler) reconcile.Reconciler {
	r = countingErrors(name, r)
	if o.Middleware == nil {
		return r
	}
	return o.Middleware(name, r)
}

// nodeChanged passes the ValkeyNode changes the topology controller acts on: creation and
// deletion, a spec change, the start of deletion, RollPending, the WorkloadReady changes it
// reads (see workloadGateChanged), SnapshotReady (a backup waits for it), VolumeHealthy and
// the volume's capacity or growth (the cluster's Degraded, LargestVolume and GrownVolumes;
// a backup fails on it), a restored node's claim evidence (the cluster's Restored), a new pod IP, valkey.io/paused added or removed, and Drained changing on a node being deleted: a round
// of its cluster still in flight when the cluster went may write it after the node was
// found drained, and is then undone.
func nodeChanged() predicate.Predicate {
	return predicate.Or[client.Object](
		predicate.GenerationChangedPredicate{},
		status.DeletionChanged(),
		deletingDrainedChanged(),
		status.ConditionChanged(valkeyv1.ConditionRollPending),
		status.ConditionChanged(valkeyv1.ConditionSnapshotReady),
		status.ConditionChanged(valkeyv1.ConditionVolumeHealthy),
		volumeSizeChanged(),
		restoreEvidenceChanged(),
		workloadGateChanged(),
		nodeUpdate(func(o, n *valkeyv1.ValkeyNode) bool { return round.PodIP(o) != round.PodIP(n) }),
		pauseChanged(),
	)
}

// pauseChanged passes an update that adds or removes valkey.io/paused or changes
// valkey.io/allow-downgrade (the version gate reads it).
func pauseChanged() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, n := e.ObjectOld.GetAnnotations(), e.ObjectNew.GetAnnotations()
			return valkeyv1.Paused(o) != valkeyv1.Paused(n) || o[valkeyv1.AnnotationAllowDowngrade] != n[valkeyv1.AnnotationAllowDowngrade]
		},
	}
}

// changedByOthers passes the changes to an object the controller writes that it must undo:
// a deletion or a spec change (its own writes are no-ops by then). Its own creations and
// status updates (a budget's counts) are not passed.
func changedByOthers() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc: func(event.CreateEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration()
		},
	}
}

// nodeUpdate passes only the updates of a ValkeyNode for which changed(old, new) holds.
func nodeUpdate(changed func(o, n *valkeyv1.ValkeyNode) bool) predicate.Predicate {
	return predicate.Funcs{
		CreateFunc: func(event.CreateEvent) bool { return false },
		DeleteFunc: func(event.DeleteEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*valkeyv1.ValkeyNode)
			n, ok2 := e.ObjectNew.(*valkeyv1.ValkeyNode)
			return ok1 && ok2 && changed(o, n)
		},
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// deletingDrainedChanged passes an update of a node being deleted whose Drained changed.
func deletingDrainedChanged() predicate.Predicate {
	return nodeUpdate(func(o, n *valkeyv1.ValkeyNode) bool {
		return !n.DeletionTimestamp.IsZero() &&
			status.IsTrue(o.Status.Conditions, valkeyv1.ConditionDrained) != status.IsTrue(n.Status.Conditions, valkeyv1.ConditionDrained)
	})
}

// restoreEvidenceChanged passes an update of a restored node (spec.restore) that changes
// what its Restored reads of its claim: status.volume.restoredFrom, or VolumeReady turning
// to or from RestoreClaimExists.
func restoreEvidenceChanged() predicate.Predicate {
	return nodeUpdate(func(o, n *valkeyv1.ValkeyNode) bool {
		return n.Spec.Restore != nil && restoreEvidence(o) != restoreEvidence(n)
	})
}

// restoreEvidence is a node's status.volume.restoredFrom and whether its VolumeReady says
// RestoreClaimExists.
func restoreEvidence(n *valkeyv1.ValkeyNode) [2]string {
	var e [2]string
	if n.Status.Volume != nil {
		e[0] = n.Status.Volume.RestoredFrom
	}
	if c := status.Get(n.Status.Conditions, valkeyv1.ConditionVolumeReady); c != nil && c.Reason == valkeyv1.ReasonRestoreClaimExists {
		e[1] = c.Reason
	}
	return e
}

// volumeSizeChanged passes an update that changes a node's status.volume.capacity or
// status.volume.autoGrownTo.
func volumeSizeChanged() predicate.Predicate {
	return nodeUpdate(func(o, n *valkeyv1.ValkeyNode) bool { return volumeSize(o) != volumeSize(n) })
}

// volumeSize is a node's claim capacity and autoGrow size, as reported.
func volumeSize(n *valkeyv1.ValkeyNode) [2]string {
	if n.Status.Volume == nil {
		return [2]string{}
	}
	return [2]string{n.Status.Volume.Capacity, n.Status.Volume.AutoGrownTo}
}
