package schedule

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// backupsOfPhases are backups created a minute apart, oldest first, in the given phases.
func backupsOfPhases(phases ...valkeyv1.BackupPhase) []valkeyv1.ValkeyBackup {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	out := make([]valkeyv1.ValkeyBackup, len(phases))
	for i, p := range phases {
		out[i].Name = fmt.Sprintf("b%d", i)
		out[i].CreationTimestamp = metav1.NewTime(t0.Add(time.Duration(i) * time.Minute))
		out[i].Status.Phase = p
	}
	return out
}

func namesOf(bs []*valkeyv1.ValkeyBackup) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = b.Name
	}
	return out
}

func TestPastRetention(t *testing.T) {
	const (
		done = valkeyv1.BackupCompleted
		fail = valkeyv1.BackupFailed
		run  = valkeyv1.BackupSaving
	)
	for _, tc := range []struct {
		name   string
		phases []valkeyv1.BackupPhase
		want   []string // newest first
	}{
		{"completed past retention", []valkeyv1.BackupPhase{done, done, done}, []string{"b0"}},
		{"failed older than the newest completed", []valkeyv1.BackupPhase{fail, done, fail}, []string{"b0"}},
		{"failing every time: the newest two kept", []valkeyv1.BackupPhase{fail, fail, fail, fail}, []string{"b1", "b0"}},
		{"in progress never", []valkeyv1.BackupPhase{run, done, done, done}, []string{"b1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := namesOf(pastRetention(backupsOfPhases(tc.phases...), 2))
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("pastRetention = %v, want %v", got, tc.want)
			}
		})
	}
}
