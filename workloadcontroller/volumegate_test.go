package workloadcontroller

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

func TestVolumeUnreported(t *testing.T) {
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	fresh := &valkeyv1.ValkeyNode{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)}}
	reported := fresh.DeepCopy()
	reported.Status.Conditions = []metav1.Condition{status.Condition(valkeyv1.ConditionVolumeReady, false, valkeyv1.ReasonCreating, "")}
	for _, tc := range []struct {
		name string
		node *valkeyv1.ValkeyNode
		now  time.Time
		want time.Duration
	}{
		{"not reported, within the grace: wait the rest", fresh, created.Add(3 * time.Second), 7 * time.Second},
		{"not reported, past the grace: report now", fresh, created.Add(11 * time.Second), 0},
		{"reported: report now", reported, created.Add(time.Second), 0},
	} {
		if got := volumeUnreported(tc.node, 10*time.Second, tc.now); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
	if volumeMissing(fresh) == "" || volumeMissing(reported) != "" {
		t.Errorf("volumeMissing: %q for an unreported node, %q for a reported one", volumeMissing(fresh), volumeMissing(reported))
	}
}
