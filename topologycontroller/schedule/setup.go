package schedule

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/partition"
)

// IndexByCluster indexes the ValkeyBackupSchedules by the cluster they name (ClusterField):
// a cluster's creation or deletion wakes its schedules.
func IndexByCluster(ctx context.Context, indexer client.FieldIndexer) error {
	if err := indexer.IndexField(ctx, &valkeyv1.ValkeyBackupSchedule{}, ClusterField, func(o client.Object) []string {
		return []string{o.(*valkeyv1.ValkeyBackupSchedule).Spec.ClusterName}
	}); err != nil {
		return fmt.Errorf("index ValkeyBackupSchedules by cluster: %w", err)
	}
	return nil
}

// OfBackup maps a scheduled backup's event to its schedule (retention counts it).
func OfBackup(_ context.Context, o client.Object) []reconcile.Request {
	name := o.GetLabels()[valkeyv1.LabelBackupSchedule]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: name}}}
}

// Key is the partition key of a schedule: its cluster's namespace/name.
func Key(ctx context.Context, c client.Client, req reconcile.Request) (string, error) {
	var s valkeyv1.ValkeyBackupSchedule
	if err := c.Get(ctx, req.NamespacedName, &s); err != nil {
		return "", client.IgnoreNotFound(err)
	}
	return partition.ClusterKey(s.Namespace, s.Spec.ClusterName), nil
}
