package schedule

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/requests"
	"valkey.io/operator/internal/status"
)

// ClusterField indexes ValkeyBackupSchedules by spec.clusterName.
const ClusterField = "spec.clusterName"

// clusterMissing says why the schedule's cluster cannot be backed up because it is not
// there: it does not exist, or it is being deleted; "" when it exists.
func (r *Reconciler) clusterMissing(ctx context.Context, s *valkeyv1.ValkeyBackupSchedule) (string, error) {
	var vc valkeyv1.ValkeyCluster
	key := client.ObjectKey{Namespace: s.Namespace, Name: s.Spec.ClusterName}
	err := r.Get(ctx, key, &vc)
	if apierrors.IsNotFound(err) && r.APIReader != nil {
		err = r.APIReader.Get(ctx, key, &vc)
	}
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Sprintf("the ValkeyCluster %s does not exist in namespace %s", s.Spec.ClusterName, s.Namespace), nil
	case err != nil:
		return "", fmt.Errorf("get the ValkeyCluster %s: %w", s.Spec.ClusterName, err)
	case !vc.DeletionTimestamp.IsZero():
		return fmt.Sprintf("the ValkeyCluster %s is being deleted", s.Spec.ClusterName), nil
	}
	return "", nil
}

// skip tells whether the scheduled time due passes without a backup: while the cluster is
// missing (Ready says so), or while a backup of the schedule is unfinished (Warning event
// BackupSkipped naming it). A busy cluster or a slow backup thus never queues one backup
// per scheduled time.
func (r *Reconciler) skip(s *valkeyv1.ValkeyBackupSchedule, due time.Time, clusterMissing string, backups []valkeyv1.ValkeyBackup) bool {
	if clusterMissing != "" {
		return true
	}
	b := unfinishedBackup(backups)
	if b == nil {
		return false
	}
	r.Recorder.Eventf(s, b, corev1.EventTypeWarning, valkeyv1.EventBackupSkipped, "Schedule",
		"no backup for %s: the schedule's backup %s is still %s", due.Format(time.RFC3339), b.Name, backupProgress(b))
	return true
}

// unfinishedBackup is the oldest backup, not being deleted, that is neither Completed nor
// Failed; nil when there is none.
func unfinishedBackup(backups []valkeyv1.ValkeyBackup) *valkeyv1.ValkeyBackup {
	var oldest *valkeyv1.ValkeyBackup
	for i := range backups {
		b := &backups[i]
		if b.Finished() || !b.DeletionTimestamp.IsZero() {
			continue
		}
		if oldest == nil || b.CreationTimestamp.Before(&oldest.CreationTimestamp) {
			oldest = b
		}
	}
	return oldest
}

// backupProgress is a backup's phase and, when it has one, its Ready reason and message.
func backupProgress(b *valkeyv1.ValkeyBackup) string {
	phase := string(b.Status.Phase)
	if phase == "" {
		phase = string(valkeyv1.BackupPending)
	}
	if c := status.Get(b.Status.Conditions, valkeyv1.ConditionReady); c != nil {
		return fmt.Sprintf("%s (%s: %s)", phase, c.Reason, c.Message)
	}
	return phase
}

// backupsOf lists the schedule's own backups: those labelled with its UID (it made them)
// and of its cluster. The name label is no proof: backups outlive their schedule, so a
// schedule of the same name made later (for another cluster, say) finds its predecessor's
// under it, and a backup made by an earlier version of the operator carries only the name:
// neither is this schedule's to wait for or to delete.
func (r *Reconciler) backupsOf(ctx context.Context, s *valkeyv1.ValkeyBackupSchedule) ([]valkeyv1.ValkeyBackup, error) {
	var list valkeyv1.ValkeyBackupList
	if err := r.List(ctx, &list, client.InNamespace(s.Namespace), client.MatchingLabels{valkeyv1.LabelBackupScheduleUID: string(s.UID)}); err != nil {
		return nil, fmt.Errorf("list the backups of schedule %s: %w", s.Name, err)
	}
	own := list.Items[:0]
	for _, b := range list.Items {
		if b.Spec.ClusterName == s.Spec.ClusterName {
			own = append(own, b)
		}
	}
	return own, nil
}

// SchedulesOfCluster maps the creation or deletion of a ValkeyCluster to the schedules that
// name it: their Ready follows it.
func (r *Reconciler) SchedulesOfCluster(ctx context.Context, o client.Object) []reconcile.Request {
	return requests.Of(ctx, r, &valkeyv1.ValkeyBackupScheduleList{}, nil, "the ValkeyBackupSchedules of ValkeyCluster "+client.ObjectKeyFromObject(o).String(),
		client.InNamespace(o.GetNamespace()), client.MatchingFields{ClusterField: o.GetName()})
}
