package schedule

import (
	"testing"
	"time"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// The most recent scheduled time (not every missed one) is taken, a schedule created
// during a scheduled minute takes that minute, and the reconcile wakes at the next time.
func TestScheduleTimes(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, tc := range []struct {
		name, expr, since, now, last, next string
	}{
		{"every minute, created during the minute", "* * * * *", "2026-01-02T03:04:30Z", "2026-01-02T03:04:31Z", "2026-01-02T03:04:00Z", "2026-01-02T03:05:00Z"},
		{"every minute, three missed", "* * * * *", "2026-01-02T03:04:00Z", "2026-01-02T03:07:59Z", "2026-01-02T03:07:00Z", "2026-01-02T03:08:00Z"},
		{"daily at 03:00, not yet due", "0 3 * * *", "2026-01-02T03:04:30Z", "2026-01-02T23:00:00Z", "", "2026-01-03T03:00:00Z"},
		{"daily at 03:00, two days missed", "0 3 * * *", "2026-01-01T03:00:00Z", "2026-01-03T05:00:00Z", "2026-01-03T03:00:00Z", "2026-01-04T03:00:00Z"},
		{"every 15 minutes, last taken", "*/15 * * * *", "2026-01-02T03:15:00Z", "2026-01-02T03:20:00Z", "2026-01-02T03:15:00Z", "2026-01-02T03:30:00Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := parseSchedule(tc.expr)
			if err != nil {
				t.Fatal(err)
			}
			got := lastScheduled(s, at(tc.since), at(tc.now))
			if (tc.last == "" && !got.IsZero()) || (tc.last != "" && !got.Equal(at(tc.last))) {
				t.Fatalf("last scheduled %v, want %q", got, tc.last)
			}
			if next := nextScheduled(s, at(tc.now)); !next.Equal(at(tc.next)) {
				t.Fatalf("next %v, want %s", next, tc.next)
			}
		})
	}
	if name := valkeyv1.ScheduledBackupName("nightly", at("2026-01-02T03:04:00Z")); name != "nightly-29455384" {
		t.Fatalf("backup name %s", name)
	}
	for _, bad := range []string{"61 * * * *", "* * * *", "a b c d e", "0 3 * * 8"} {
		if _, err := parseSchedule(bad); err == nil {
			t.Fatalf("%q parsed", bad)
		}
	}
}
