package schedule

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/requeue"
	"valkey.io/operator/internal/status"
)

// Reconciler creates a schedule's ValkeyBackups at its cron times and deletes
// those past its retention. The backups it creates have no owner: deleting a schedule
// keeps them. It wakes at the next scheduled time (RequeueAfter), on a change of the
// schedule, and when one of its backups changes (retention counts the completed ones).
type Reconciler struct {
	client.Client
	Recorder recorder.EventRecorder
	// APIReader confirms past the cache that a cluster is missing before a scheduled time
	// passes without its backup (the Client when nil): a cluster created a moment before
	// its schedule may not be in the cache yet.
	APIReader client.Reader
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Reconcile runs one schedule: the time due, if any, retention, and its status.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var s valkeyv1.ValkeyBackupSchedule
	if err := r.Get(ctx, req.NamespacedName, &s); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !s.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	res, err := r.reconcileSchedule(ctx, &s)
	if err != nil {
		return requeue.Settle(ctx, err)
	}
	return res, nil
}

func (r *Reconciler) reconcileSchedule(ctx context.Context, s *valkeyv1.ValkeyBackupSchedule) (ctrl.Result, error) {
	before := s.DeepCopy()
	sched, err := parseSchedule(s.Spec.Schedule)
	if err != nil {
		msg := fmt.Sprintf("schedule %q does not parse: %v; give five fields: minute hour day-of-month month day-of-week (UTC)", s.Spec.Schedule, err)
		if !isReason(s.Status.Conditions, valkeyv1.ReasonInvalidSchedule, msg) {
			r.Recorder.Eventf(s, nil, corev1.EventTypeWarning, valkeyv1.ReasonInvalidSchedule, "Schedule", "%s", msg)
		}
		scheduleReady(s, false, valkeyv1.ReasonInvalidSchedule, msg)
		return ctrl.Result{}, r.writeSchedule(ctx, before, s)
	}
	now := r.clock().UTC()
	backups, err := r.backupsOf(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	if s.Spec.Suspend {
		scheduleReady(s, true, valkeyv1.ReasonSuspended, "suspended: no backup is created")
	} else if err := r.schedule(ctx, s, sched, now, backups); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.prune(ctx, s, backups); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.writeSchedule(ctx, before, s); err != nil {
		return ctrl.Result{}, err
	}
	if s.Spec.Suspend {
		return ctrl.Result{}, nil // a change of the schedule wakes it
	}
	return ctrl.Result{RequeueAfter: nextScheduled(sched, now).Sub(now)}, nil
}

// schedule takes the time due, if any, and reports Ready: Scheduled, or ClusterNotFound
// (with a Warning event when it starts) while the schedule's cluster does not exist.
func (r *Reconciler) schedule(ctx context.Context, s *valkeyv1.ValkeyBackupSchedule, sched interface{ Next(time.Time) time.Time }, now time.Time, backups []valkeyv1.ValkeyBackup) error {
	missing, err := r.clusterMissing(ctx, s)
	if err != nil {
		return err
	}
	if err := r.createDue(ctx, s, sched, now, missing, backups); err != nil {
		return err
	}
	next := nextScheduled(sched, now).Format(time.RFC3339)
	if missing == "" {
		scheduleReady(s, true, valkeyv1.ReasonScheduled, fmt.Sprintf("next backup at %s", next))
		return nil
	}
	if c := status.Get(s.Status.Conditions, valkeyv1.ConditionReady); c == nil || c.Reason != valkeyv1.ReasonClusterNotFound {
		r.Recorder.Eventf(s, nil, corev1.EventTypeWarning, valkeyv1.ReasonClusterNotFound, "Schedule", "%s: no backup is created until it does", missing)
	}
	scheduleReady(s, false, valkeyv1.ReasonClusterNotFound, fmt.Sprintf(
		"%s: scheduled times pass without a backup until it does (next at %s)", missing, next))
	return nil
}

// createDue creates the backup of the most recent scheduled time not yet taken (the
// times missed before it are not made up). The time passes without a backup, and counts as
// taken, while the cluster is missing or a backup of the schedule is unfinished (see skip):
// scheduled backups never pile up.
func (r *Reconciler) createDue(ctx context.Context, s *valkeyv1.ValkeyBackupSchedule, sched interface{ Next(time.Time) time.Time }, now time.Time, clusterMissing string, backups []valkeyv1.ValkeyBackup) error {
	since := s.CreationTimestamp.Time
	if s.Status.LastScheduleTime != nil {
		since = s.Status.LastScheduleTime.Time
	}
	due := lastScheduled(sched, since, now)
	if due.IsZero() || (s.Status.LastScheduleTime != nil && !due.After(s.Status.LastScheduleTime.Time)) {
		return nil
	}
	t := metav1.NewTime(due)
	if r.skip(s, due, clusterMissing, backups) {
		s.Status.LastScheduleTime = &t
		return nil
	}
	b := scheduledBackup(s, due)
	if err := r.Create(ctx, b); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create the ValkeyBackup %s: %w", b.Name, err)
	} else if err == nil {
		r.Recorder.Eventf(s, b, corev1.EventTypeNormal, valkeyv1.EventBackupCreated, "Schedule", "created the ValkeyBackup %s for %s", b.Name, due.Format(time.RFC3339))
	}
	s.Status.LastScheduleTime, s.Status.LastBackup = &t, b.Name
	return nil
}

// scheduledBackup is the backup s takes at t: named for the schedule and the minute,
// labelled with the schedule's name and UID (the UID is what makes it the schedule's: see
// backupsOf), without owner.
func scheduledBackup(s *valkeyv1.ValkeyBackupSchedule, t time.Time) *valkeyv1.ValkeyBackup {
	return &valkeyv1.ValkeyBackup{
		ObjectMeta: metav1.ObjectMeta{
			Name: valkeyv1.ScheduledBackupName(s.Name, t), Namespace: s.Namespace,
			Labels: map[string]string{
				valkeyv1.LabelBackupSchedule: s.Name, valkeyv1.LabelBackupScheduleUID: string(s.UID),
				valkeyv1.LabelCluster: s.Spec.ClusterName,
			},
		},
		Spec: valkeyv1.ValkeyBackupSpec{ClusterName: s.Spec.ClusterName, VolumeSnapshotClassName: s.Spec.VolumeSnapshotClassName},
	}
}

func (r *Reconciler) clock() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// scheduleReady sets the schedule's Ready condition.
func scheduleReady(s *valkeyv1.ValkeyBackupSchedule, ok bool, reason, msg string) {
	c := status.Condition(valkeyv1.ConditionReady, ok, reason, msg)
	c.ObservedGeneration = s.Generation
	meta.SetStatusCondition(&s.Status.Conditions, c)
}

// isReason tells whether Ready already says reason with msg.
func isReason(conds []metav1.Condition, reason, msg string) bool {
	c := status.Get(conds, valkeyv1.ConditionReady)
	return c != nil && c.Reason == reason && c.Message == msg
}

// writeSchedule writes s's status when it changed from before.
func (r *Reconciler) writeSchedule(ctx context.Context, before, s *valkeyv1.ValkeyBackupSchedule) error {
	if equality.Semantic.DeepEqual(before.Status, s.Status) {
		return nil
	}
	if err := r.Status().Patch(ctx, s, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("write the status of ValkeyBackupSchedule %s: %w", s.Name, err)
	}
	return nil
}
