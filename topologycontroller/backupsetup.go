package topologycontroller

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/partition"
	"valkey.io/operator/internal/requests"
	"valkey.io/operator/internal/status"
	"valkey.io/operator/topologycontroller/backup"
	"valkey.io/operator/topologycontroller/schedule"
)

// +kubebuilder:rbac:groups=valkey.io,resources=valkeybackups,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=valkey.io,resources=valkeybackups/status,verbs=get;patch
// +kubebuilder:rbac:groups=valkey.io,resources=valkeybackupschedules,verbs=get;list;watch
// +kubebuilder:rbac:groups=valkey.io,resources=valkeybackupschedules/status,verbs=get;patch

// setupBackups indexes the ValkeyBackups and schedules by cluster and registers the controllers of
// backups whose cluster is missing and of schedules. Backups and schedules are routed by
// their cluster's partition key, so one replica handles a cluster and all its backups.
func setupBackups(mgr ctrl.Manager, r *Reconciler, shards *partitioned) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &valkeyv1.ValkeyBackup{}, backup.ClusterField, func(o client.Object) []string {
		return []string{o.(*valkeyv1.ValkeyBackup).Spec.ClusterName}
	}); err != nil {
		return fmt.Errorf("index ValkeyBackups by cluster: %w", err)
	}
	br := &backup.Reconciler{Client: mgr.GetClient(), Recorder: r.Recorder}
	bb := ctrl.NewControllerManagedBy(mgr)
	if shards != nil {
		bb = bb.WatchesRawSource(shards.set.Source(shards.backupsOf))
	}
	if err := bb.
		Named("topology-backup").
		For(&valkeyv1.ValkeyBackup{}).
		Watches(&valkeyv1.ValkeyCluster{}, handler.EnqueueRequestsFromMapFunc(br.BackupsOfCluster)).
		Complete(shards.guardByCluster(r.Options.wrap("topology-backup", br), backupKey)); err != nil {
		return fmt.Errorf("set up ValkeyBackup controller: %w", err)
	}
	return setupSchedules(mgr, r, shards)
}

// setupSchedules registers the controller of backup schedules (package schedule), routed by
// their cluster's partition key like the backups they create.
func setupSchedules(mgr ctrl.Manager, r *Reconciler, shards *partitioned) error {
	if err := schedule.IndexByCluster(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return err
	}
	sr := &schedule.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: r.Recorder}
	sb := ctrl.NewControllerManagedBy(mgr)
	if shards != nil {
		sb = sb.WatchesRawSource(shards.set.Source(shards.schedulesOf))
	}
	if err := sb.
		Named("topology-backup-schedule").
		For(&valkeyv1.ValkeyBackupSchedule{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&valkeyv1.ValkeyBackup{}, handler.EnqueueRequestsFromMapFunc(schedule.OfBackup)).
		Watches(&valkeyv1.ValkeyCluster{}, handler.EnqueueRequestsFromMapFunc(sr.SchedulesOfCluster), builder.WithPredicates(status.DeletionChanged())).
		Complete(shards.guardByCluster(r.Options.wrap("topology-backup-schedule", sr), schedule.Key)); err != nil {
		return fmt.Errorf("set up ValkeyBackupSchedule controller: %w", err)
	}
	return nil
}

// clusterOfBackup maps a ValkeyBackup event (creation, change, deletion) to its cluster's
// reconcile, which runs the backup.
func clusterOfBackup(_ context.Context, o client.Object) []reconcile.Request {
	b, ok := o.(*valkeyv1.ValkeyBackup)
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: b.Namespace, Name: b.Spec.ClusterName}}}
}

// backupKey is the partition key of a backup: its cluster's namespace/name.
func backupKey(ctx context.Context, c client.Client, req reconcile.Request) (string, error) {
	var b valkeyv1.ValkeyBackup
	if err := c.Get(ctx, req.NamespacedName, &b); err != nil {
		return "", client.IgnoreNotFound(err)
	}
	return partition.ClusterKey(b.Namespace, b.Spec.ClusterName), nil
}

// guardByCluster runs r for the objects whose cluster is in a partition held.
func (s *partitioned) guardByCluster(r reconcile.Reconciler, key func(context.Context, client.Client, reconcile.Request) (string, error)) reconcile.Reconciler {
	if s == nil {
		return r
	}
	return s.set.Guard(r, func(ctx context.Context, req reconcile.Request) (string, error) {
		return key(ctx, s.c, req)
	})
}

// backupsOf lists the unfinished ValkeyBackups of partition p (enqueued when it is gained).
func (s *partitioned) backupsOf(ctx context.Context, p int) []reconcile.Request {
	return requests.Of(ctx, s.c, &valkeyv1.ValkeyBackupList{}, func(o client.Object) bool {
		b := o.(*valkeyv1.ValkeyBackup)
		return !b.Finished() && s.set.Of(partition.ClusterKey(b.Namespace, b.Spec.ClusterName)) == p
	}, "the ValkeyBackups of a partition gained")
}

// schedulesOf lists the ValkeyBackupSchedules of partition p.
func (s *partitioned) schedulesOf(ctx context.Context, p int) []reconcile.Request {
	return requests.Of(ctx, s.c, &valkeyv1.ValkeyBackupScheduleList{}, func(o client.Object) bool {
		sc := o.(*valkeyv1.ValkeyBackupSchedule)
		return s.set.Of(partition.ClusterKey(sc.Namespace, sc.Spec.ClusterName)) == p
	}, "the ValkeyBackupSchedules of a partition gained")
}

// clustersRestoringFrom maps a ValkeyBackup to the clusters of its namespace restoring from
// it that are not restored yet: a backup appearing or completing lets them start.
func (r *Reconciler) clustersRestoringFrom(ctx context.Context, o client.Object) []reconcile.Request {
	var list valkeyv1.ValkeyClusterList
	if err := r.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, vc := range list.Items {
		if vc.Spec.RestoreFrom == o.GetName() && !status.IsTrue(vc.Status.Conditions, valkeyv1.ConditionRestored) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&vc)})
		}
	}
	return out
}

// clustersOfBackup maps a ValkeyBackup to the cluster it backs up and to the clusters
// restoring from it.
func (r *Reconciler) clustersOfBackup(ctx context.Context, o client.Object) []reconcile.Request {
	return append(clusterOfBackup(ctx, o), r.clustersRestoringFrom(ctx, o)...)
}

// backupPhaseChanged passes a ValkeyBackup's creation and deletion, and an update that
// changes its phase.
func backupPhaseChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*valkeyv1.ValkeyBackup)
		n, ok2 := e.ObjectNew.(*valkeyv1.ValkeyBackup)
		return ok1 && ok2 && o.Status.Phase != n.Status.Phase
	}}
}
