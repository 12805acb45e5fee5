package partition

import (
	"fmt"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// AnnotationPartitions records on every Lease a replica writes the partition count it
// runs with. Replicas with different counts hash a cluster into different partitions (a
// cluster in p03 of 8 is in p03 or p11 of 16), so their Leases do not exclude each other:
// a replica that holds nothing takes a partition only when no live replica of another count
// is seen (see otherCount). A Lease without it (written by a release before the count was
// recorded) counts as another count.
const AnnotationPartitions = "valkey.io/partitions"

// memberNotListed is why a replica that has just written its member Lease looks again.
const memberNotListed = "its member lease is not listed yet"

// waitingForCount is 1 while this replica holds nothing because a replica of another
// partition count is alive.
var waitingForCount = prometheus.NewGauge(prometheus.GaugeOpts{
	Name: "valkey_partition_waiting_for_other_count",
	Help: "1 while this replica takes no partition because a replica running with another partition count is alive.",
})

func init() { metrics.Registry.MustRegister(waitingForCount) }

// count is this replica's partition count as the annotation spells it.
func (c Config) countValue() string { return strconv.Itoa(c.Partitions) }

// countOf is the partition count a Lease was written with ("" when not recorded).
func countOf(l *coordinationv1.Lease) string { return l.Annotations[AnnotationPartitions] }

// sameCount reports whether l was written by a replica with this replica's count.
func (s *Set) sameCount(l *coordinationv1.Lease) bool { return countOf(l) == s.cfg.countValue() }

// otherCount says why this replica, which holds no partition, may not take one yet ("" when
// it may): its own member Lease, with its count, is not in the list yet, or a live Lease
// (a member Lease, or a partition Lease held and not expired) was written by a replica of
// another partition count. Requiring its own member Lease in the list makes the check safe
// for two replicas starting together: each writes its member Lease before the list that
// decides, so at least one of the two lists holds the other's. A replica already holding
// partitions goes on: the other waits for it, and it waits in turn only once it holds none.
func (s *Set) otherCount(leases map[string]*coordinationv1.Lease, now time.Time) string {
	if own := leases[s.cfg.memberName()]; own == nil || holderOf(own) != s.cfg.Identity || !s.sameCount(own) {
		return memberNotListed
	}
	for name, l := range leases {
		h := holderOf(l)
		if h == "" || h == s.cfg.Identity || s.sameCount(l) || s.expired(name, now) {
			continue
		}
		count := countOf(l)
		if count == "" {
			count = "unrecorded (an earlier release)"
		}
		return fmt.Sprintf("replica %s runs with partitions=%s (lease %s), this one with %d", h, count, name, s.cfg.Partitions)
	}
	return ""
}

// holdsBack reports whether this replica takes no partition in this round, and logs why when
// the reason changes. A replica that only waits for its member Lease to be listed runs its
// next round at once.
func (s *Set) holdsBack(leases map[string]*coordinationv1.Lease, now time.Time) bool {
	if s.count() > 0 {
		return false
	}
	why := s.otherCount(leases, now)
	s.mu.Lock()
	changed := why != s.waitingFor
	s.waitingFor = why
	s.mu.Unlock()
	switch why {
	case "":
		waitingForCount.Set(0)
		if changed {
			s.log.Info("every live replica runs with this partition count: taking partitions")
		}
		return false
	case memberNotListed:
		s.wake() // it has just been written: the next round lists it
	default:
		waitingForCount.Set(1)
		if changed {
			s.log.Info("taking no partition until every replica of another partition count is gone (a rollout that changes --partitions ends with the old pods)", "reason", why)
		}
	}
	return true
}
