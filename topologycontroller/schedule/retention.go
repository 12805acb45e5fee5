package schedule

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// prune deletes those of the schedule's backups that are past its retention (their
// VolumeSnapshots go with them, by ownerReference).
func (r *Reconciler) prune(ctx context.Context, s *valkeyv1.ValkeyBackupSchedule, backups []valkeyv1.ValkeyBackup) error {
	for _, b := range pastRetention(backups, int(s.Spec.Retention)) {
		if err := r.Delete(ctx, b, client.Preconditions{UID: &b.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("delete the ValkeyBackup %s past retention: %w", b.Name, err)
		} else if err == nil {
			r.Recorder.Eventf(s, b, corev1.EventTypeNormal, valkeyv1.EventBackupPruned, "Prune",
				"deleted the %s ValkeyBackup %s: the schedule keeps the newest %d completed", b.Status.Phase, b.Name, s.Spec.Retention)
		}
	}
	return nil
}

// pastRetention are the backups to delete: the Completed ones older than the newest
// retention Completed ones, the Failed ones older than the newest Completed one, and the
// Failed ones past the newest retention Failed ones (a schedule whose backups keep failing
// keeps the last few to read, not one per scheduled time). A backup in progress is never
// deleted.
func pastRetention(items []valkeyv1.ValkeyBackup, retention int) []*valkeyv1.ValkeyBackup {
	bs := make([]*valkeyv1.ValkeyBackup, 0, len(items))
	for i := range items {
		if items[i].DeletionTimestamp.IsZero() {
			bs = append(bs, &items[i])
		}
	}
	sort.Slice(bs, func(i, j int) bool { // newest first
		a, b := bs[i].CreationTimestamp, bs[j].CreationTimestamp
		if !a.Equal(&b) {
			return b.Before(&a)
		}
		return bs[i].Name > bs[j].Name
	})
	var out []*valkeyv1.ValkeyBackup
	completed, failed := 0, 0
	for _, b := range bs {
		switch b.Status.Phase {
		case valkeyv1.BackupCompleted:
			completed++
			if completed > retention {
				out = append(out, b)
			}
		case valkeyv1.BackupFailed:
			failed++
			if completed > 0 || failed > retention {
				out = append(out, b)
			}
		}
	}
	return out
}
