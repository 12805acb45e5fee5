package partition

import (
	"testing"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
)

func leaseEvent(t watch.EventType, name, holder, rv string) watch.Event {
	return watch.Event{Type: t, Object: &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: rv},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder)},
	}}
}

func testSet(t *testing.T) *Set {
	t.Helper()
	s, err := New(Config{Name: "n", Namespace: "ns", Identity: "me", Partitions: 2,
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}, nil, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func woken(s *Set) bool {
	select {
	case <-s.wakeup:
		return true
	default:
		return false
	}
}

func TestEventTimesTheExpiryOfAnotherReplicasLease(t *testing.T) {
	s := testSet(t)
	s.event(leaseEvent(watch.Added, "n-p00", "other", "1"))
	if !woken(s) {
		t.Fatal("a Lease newly seen wakes the loop")
	}
	seen := s.seen["n-p00"].at
	// Its expiry is a lease duration after it was seen: the loop wakes then, not at a round.
	if got := s.nextExpiry(seen.Add(14*time.Second), seen.Add(14*time.Second)); got != time.Second {
		t.Fatalf("next expiry %s, want 1s", got)
	}
	// A round that judged before the expiry and finished after it: the next round is due
	// at once, not a retry period later.
	if got := s.nextExpiry(seen.Add(14*time.Second), seen.Add(16*time.Second)); got != 0 {
		t.Fatalf("a Lease that expired during the round: next %s, want 0", got)
	}
	// One already expired when the round judged was taken or left by it: it wakes nothing.
	if got := s.nextExpiry(seen.Add(16*time.Second), seen.Add(17*time.Second)); got != s.cfg.RetryPeriod {
		t.Fatalf("a Lease the round judged expired: next %s, want the retry period", got)
	}
	s.event(leaseEvent(watch.Modified, "n-p00", "other", "1"))
	if woken(s) || !s.seen["n-p00"].at.Equal(seen) {
		t.Fatal("an event of a version already seen changes nothing")
	}
	s.event(leaseEvent(watch.Modified, "n-p00", "other", "2"))
	if woken(s) || !s.seen["n-p00"].at.After(seen) {
		t.Fatal("a renewal pushes the expiry back without waking the loop")
	}
	renewed := s.seen["n-p00"].at
	s.event(leaseEvent(watch.Modified, "n-p00", "other", "1"))
	if woken(s) || !s.seen["n-p00"].at.Equal(renewed) || s.seen["n-p00"].rv != "2" {
		t.Fatal("a late event of an older version changes nothing (it would push the expiry back twice)")
	}
	s.observe(map[string]*coordinationv1.Lease{"n-p00": leaseEvent(watch.Modified, "n-p00", "other", "1").Object.(*coordinationv1.Lease)}, time.Now().Add(time.Second))
	if !s.seen["n-p00"].at.Equal(renewed) {
		t.Fatal("a list showing an older version than the watch did changes nothing")
	}
	s.event(leaseEvent(watch.Modified, "n-p00", "", "3"))
	if !woken(s) {
		t.Fatal("a release wakes the loop")
	}
	if got := s.nextExpiry(time.Now(), time.Now()); got != s.cfg.RetryPeriod {
		t.Fatalf("a free Lease has no expiry: next %s, want the retry period", got)
	}
	s.event(leaseEvent(watch.Modified, "n-p01", "me", "4"))
	_ = woken(s)
	if got := s.nextExpiry(time.Now(), time.Now().Add(14*time.Second)); got != s.cfg.RetryPeriod {
		t.Fatalf("this replica's own Lease does not wake it: next %s", got)
	}
	s.event(leaseEvent(watch.Deleted, "n-p01", "me", "4"))
	if _, ok := s.seen["n-p01"]; ok || !woken(s) {
		t.Fatal("a deleted Lease is forgotten and wakes the loop")
	}
}
