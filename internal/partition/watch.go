package partition

import (
	"context"
	"strconv"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// watchLeases keeps this replica's observations of the set's Leases current between rounds:
// a renewal is seen when the API server sends it, not at the next round, so a Lease's expiry
// by the local clock (last change seen plus LeaseDuration) follows its last renewal by
// milliseconds. A Lease released, deleted or newly held wakes the loop at once. The watch is
// started again when the API server ends it.
func (s *Set) watchLeases(ctx context.Context, w client.WithWatch) {
	for ctx.Err() == nil {
		var list coordinationv1.LeaseList
		wi, err := w.Watch(ctx, &list, client.InNamespace(s.cfg.Namespace), client.MatchingLabels{LabelSet: s.cfg.Name})
		if err != nil {
			if ctx.Err() == nil {
				s.log.V(1).Info("watch the partition leases failed; the loop polls", "error", err.Error())
			}
			select {
			case <-ctx.Done():
			case <-time.After(s.cfg.RetryPeriod):
			}
			continue
		}
		s.drain(ctx, wi)
	}
}

// drain records every event of wi until it ends or ctx does.
func (s *Set) drain(ctx context.Context, wi watch.Interface) {
	defer wi.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-wi.ResultChan():
			if !ok {
				return
			}
			s.event(ev)
		}
	}
}

// event records one watch event. Seeing a change later than it happened only delays its
// expiry here: observations stay on the safe side of the holder's renew deadline. An event
// older than what a round's list already showed (a watch that lags under load) is not a
// change: taking it for one would push the expiry back once for it and again when the list
// shows the newer version, up to a retry period late.
func (s *Set) event(ev watch.Event) {
	l, ok := ev.Object.(*coordinationv1.Lease)
	if !ok {
		return
	}
	s.mu.Lock()
	o, seen := s.seen[l.Name]
	wake := false
	switch {
	case ev.Type == watch.Deleted:
		delete(s.seen, l.Name)
		wake = true
	case seen && !newerVersion(o.rv, l.ResourceVersion):
	default:
		s.seen[l.Name] = observation{rv: l.ResourceVersion, holder: holderOf(l), at: time.Now()}
		wake = !seen || o.holder != holderOf(l) || holderOf(l) == ""
	}
	s.mu.Unlock()
	if wake {
		s.wake()
	}
}

// wake runs the loop's next round now.
func (s *Set) wake() {
	select {
	case s.wakeup <- struct{}{}:
	default:
	}
}

// nextExpiry is how long after now until the first Lease held by another replica expires
// by this replica's clock (RetryPeriod when none will): the loop runs a round then, so a
// dead replica's partition is taken a lease duration after its last renewal was seen. A
// Lease that expired after the last round decided (decided: the time that round judged
// expiries by) and before now was not judged by it: the next round is due at once (0). One
// expired before that round decided was judged, taken or left, and wakes nothing.
func (s *Set) nextExpiry(decided, now time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := s.cfg.RetryPeriod
	for _, o := range s.seen {
		if o.holder == "" || o.holder == s.cfg.Identity {
			continue
		}
		expiry := o.at.Add(s.cfg.LeaseDuration)
		if !expiry.After(decided) {
			continue
		}
		next = min(next, max(expiry.Sub(now), 0))
	}
	return next
}

// newerVersion tells whether rv is a later version of a Lease than seen. Versions are
// compared as the numbers the API server's storage gives them; ones that are not numbers
// count as newer whenever they differ (a change, as before).
func newerVersion(seen, rv string) bool {
	if rv == seen {
		return false
	}
	a, errA := strconv.ParseUint(seen, 10, 64)
	b, errB := strconv.ParseUint(rv, 10, 64)
	if errA != nil || errB != nil {
		return true
	}
	return b > a
}
