package migration

import (
	"strings"
	"testing"
	"time"
)

// A slot that keeps failing is tried again after 5 s, 10 s, 20 s … up to 2 min; a failed
// atomic job counts once however many rounds see it.
func TestStallBackoff(t *testing.T) {
	var b stallBook
	now := time.Unix(1000, 0)
	var got []time.Duration
	for i := 0; i < 8; i++ {
		got = append(got, b.failed("c", 7, "OOM", now))
	}
	want := []int{5, 10, 20, 40, 80, 120, 120, 120}
	for i := range want {
		if got[i] != time.Duration(want[i])*time.Second {
			t.Fatalf("retry %d after %s, want %ds (all: %v)", i, got[i], want[i], got)
		}
	}
	if !b.waiting("c", 7, now.Add(119*time.Second)) || b.waiting("c", 7, now.Add(121*time.Second)) || b.waiting("c", 8, now) {
		t.Fatal("waiting does not follow the last backoff")
	}
	if d, fresh := b.failedJob("c", 9, "job1", "failed", now); !fresh || d != 5*time.Second {
		t.Fatalf("first failure of job1: %s, fresh %v", d, fresh)
	}
	if d, fresh := b.failedJob("c", 9, "job1", "failed", now.Add(time.Second)); fresh || d != 4*time.Second {
		t.Fatalf("job1 seen again: %s, fresh %v", d, fresh)
	}
	if d, _ := b.failedJob("c", 9, "job2", "failed", now); d != 10*time.Second {
		t.Fatalf("job2 after job1: %s", d)
	}
	msg, next := b.summary("c", now)
	if !strings.Contains(msg, "slot 7: OOM (tried 8 times)") || !strings.Contains(msg, "of 2 slots") || next != 10*time.Second {
		t.Fatalf("summary %q, next %s", msg, next)
	}
	b.cleared("c", []int{7})
	b.keepOnly("c", func(int, *stall) bool { return false })
	if msg, _ := b.summary("c", now); msg != "" || len(b.by) != 0 {
		t.Fatalf("after clearing: %q, %d clusters", msg, len(b.by))
	}
}
