package partition

import (
	"context"
	"slices"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Labels of the Leases of a partition set.
const (
	// LabelSet names the set a Lease belongs to (Config.Name).
	LabelSet = "valkey.io/partition-set"
	// LabelRole is RolePartition or RoleMember.
	LabelRole     = "valkey.io/partition-role"
	RolePartition = "partition"
	RoleMember    = "member"
)

// Start runs the loop until ctx ends: every RetryPeriod, when a Lease held by another
// replica expires by this replica's clock, and when a Lease is released, deleted or newly
// held (seen by a watch when c can watch), it reads the set's Leases, renews its own, and
// acquires or releases partitions towards its fair share. When ctx ends the
// work in flight is cancelled and awaited, then the Leases are released (unless KeepOnStop).
func (s *Set) Start(ctx context.Context) error {
	s.mu.Lock()
	s.base = ctx
	s.mu.Unlock()
	if w, ok := s.c.(client.WithWatch); ok {
		go s.watchLeases(ctx, w)
	}
	t := time.NewTicker(s.cfg.RetryPeriod)
	defer t.Stop()
	for {
		decided := s.round(ctx)
		expiry := time.NewTimer(s.nextExpiry(decided, time.Now()))
		select {
		case <-ctx.Done():
			expiry.Stop()
			s.stop()
			return nil
		case <-t.C:
		case <-s.wakeup:
		case <-expiry.C:
		}
		expiry.Stop()
	}
}

// round is one pass of the loop. It returns the time it judged the Leases' expiries by
// (a round that could not list them judged none: the time it gave up).
func (s *Set) round(ctx context.Context) time.Time {
	var list coordinationv1.LeaseList
	if err := s.c.List(ctx, &list, client.InNamespace(s.cfg.Namespace), client.MatchingLabels{LabelSet: s.cfg.Name}); err != nil {
		if ctx.Err() == nil {
			s.log.Info("list the partition leases failed; holds lapse at their renew deadline", "error", err.Error())
		}
		return time.Now()
	}
	leases := map[string]*coordinationv1.Lease{}
	for i := range list.Items {
		leases[list.Items[i].Name] = &list.Items[i]
	}
	now := time.Now()
	s.observe(leases, now)
	s.renewMember(ctx, leases[s.cfg.memberName()])
	s.collectMembers(ctx, leases, now)
	if s.holdsBack(leases, now) {
		return now
	}
	share := s.cfg.share(s.liveMembers(leases, now))
	// Expired partitions first: a round woken by an expiry takes them before the writes
	// that renew what it holds (those are due well before their deadline).
	s.acquire(ctx, leases, share, now)
	s.renewHeld(ctx, leases)
	s.releaseAbove(share)
	return now
}

// observe records each Lease's version and when it was last seen to change.
func (s *Set) observe(leases map[string]*coordinationv1.Lease, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, l := range leases {
		if o, ok := s.seen[name]; ok && !newerVersion(o.rv, l.ResourceVersion) {
			continue // the same version, or one older than the watch showed already
		}
		s.seen[name] = observation{rv: l.ResourceVersion, holder: holderOf(l), at: now}
	}
	for name := range s.seen {
		if leases[name] == nil {
			delete(s.seen, name)
		}
	}
}

// expired reports whether the Lease name has been seen unchanged for LeaseDuration.
func (s *Set) expired(name string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.seen[name]
	return !ok || o.holder == "" || now.Sub(o.at) >= s.cfg.LeaseDuration
}

// liveMembers counts the replicas alive: this one and every member Lease not expired, less
// the replicas holding a partition Lease that has expired. A live replica renews each of
// its partitions well before it expires (and stops acting on one it could not renew), so
// an expired one means its holder is gone or cut off. Without this, a dead replica would
// count until its member Lease expired too, and the others, at their fair share already,
// would take its expired partitions only then, up to a renewal later.
func (s *Set) liveMembers(leases map[string]*coordinationv1.Lease, now time.Time) int {
	lapsed := map[string]bool{}
	for name, l := range leases {
		if h := holderOf(l); l.Labels[LabelRole] == RolePartition && h != "" && s.expired(name, now) {
			lapsed[h] = true
		}
	}
	live := 1
	for name, l := range leases {
		if l.Labels[LabelRole] != RoleMember || name == s.cfg.memberName() || s.expired(name, now) || !s.sameCount(l) {
			continue // a replica of another count waits for this one: it takes no share
		}
		if lapsed[holderOf(l)] {
			continue // a partition it held has expired: it is gone
		}
		live++
	}
	return live
}

// collectMembers deletes the member Leases of replicas gone for two lease durations (a
// crashed replica does not delete its own). The delete is conditional on the version seen.
func (s *Set) collectMembers(ctx context.Context, leases map[string]*coordinationv1.Lease, now time.Time) {
	for name, l := range leases {
		if l.Labels[LabelRole] != RoleMember || name == s.cfg.memberName() || !s.expired(name, now.Add(-s.cfg.LeaseDuration)) {
			continue
		}
		s.deleteSeen(ctx, l, "a stale member lease")
	}
}

// deleteSeen deletes the Lease l as last seen (conditional on its resourceVersion: a Lease
// written since stays) and reports whether it is gone.
func (s *Set) deleteSeen(ctx context.Context, l *coordinationv1.Lease, what string) bool {
	rv := l.ResourceVersion
	leaseWrites.Inc()
	if err := s.c.Delete(ctx, l, client.Preconditions{ResourceVersion: &rv}); client.IgnoreNotFound(err) != nil {
		s.log.V(1).Info("delete "+what+" failed", "lease", l.Name, "error", err.Error())
		return false
	}
	return true
}

// renewHeld renews the Lease of every partition held. A partition whose Lease another
// replica now holds, or that is gone, is lost at once; one whose renewal fails is lost at
// its renew deadline (its timer).
func (s *Set) renewHeld(ctx context.Context, leases map[string]*coordinationv1.Lease) {
	for _, p := range s.heldPartitions() {
		l := leases[s.cfg.leaseName(p)]
		if l == nil || holderOf(l) != s.cfg.Identity {
			s.lose(p, "the lease is gone or held by another replica")
			continue
		}
		if !s.dueForRenewal(s.renewedAt(p)) {
			continue
		}
		sent := time.Now()
		if err := s.write(ctx, l, s.cfg.Identity, false); err != nil {
			s.log.V(1).Info("renew a partition lease failed", "partition", p, "error", err.Error())
			continue
		}
		s.renewed(p, sent, l)
	}
}

// acquire takes free or expired partitions while this replica holds fewer than share, and
// frees the expired ones it cannot take (see free). It starts at a place of its own (a hash
// of its identity) so that replicas starting together contend for different Leases.
func (s *Set) acquire(ctx context.Context, leases map[string]*coordinationv1.Lease, share int, now time.Time) {
	n := s.cfg.Partitions
	start := Of(s.cfg.Identity, n)
	for i := range n {
		if ctx.Err() != nil {
			return
		}
		p := (start + i) % n
		if s.has(p) {
			continue
		}
		name := s.cfg.leaseName(p)
		l := leases[name]
		if l != nil && holderOf(l) != s.cfg.Identity && !s.expired(name, now) {
			continue
		}
		if s.count() >= share {
			s.free(ctx, leases, p)
			continue
		}
		s.take(ctx, leases, p)
	}
}

// take writes the Lease of p (free, expired or missing) held by this replica and starts the
// hold. The dead holder of a Lease taken is forgotten (see forget).
func (s *Set) take(ctx context.Context, leases map[string]*coordinationv1.Lease, p int) {
	name := s.cfg.leaseName(p)
	l := leases[name]
	sent := time.Now()
	var err error
	dead := ""
	if l == nil {
		l = s.newLease(name, RolePartition)
		leaseWrites.Inc()
		err = s.c.Create(ctx, l)
	} else {
		dead = holderOf(l)
		err = s.write(ctx, l, s.cfg.Identity, true)
	}
	if err != nil {
		s.log.V(1).Info("acquire a partition lease failed", "partition", p, "error", err.Error())
		return
	}
	s.gain(p, sent, l)
	leases[name] = l // renewHeld, later in the round, finds it held
	if dead != "" && dead != s.cfg.Identity {
		s.forget(ctx, leases, dead)
	}
}

// free writes free the Lease of partition p, expired by this replica's clock, when this
// replica is at its share and cannot take it, and forgets its dead holder (see forget).
// The replica under its share then takes it at once (the release wakes it) even when it
// has not watched the Lease for a whole lease duration yet, as a replica just restarted or
// replacing the dead one has not: without this it would take it a lease duration after
// its own start, not after the last renewal. Freeing is as safe as taking: the holder
// stopped acting at its renew deadline, and the write carries the resourceVersion seen,
// so it fails if the holder renewed since.
func (s *Set) free(ctx context.Context, leases map[string]*coordinationv1.Lease, p int) {
	l := leases[s.cfg.leaseName(p)]
	if l == nil || holderOf(l) == "" || holderOf(l) == s.cfg.Identity {
		return
	}
	dead := holderOf(l)
	if err := s.write(ctx, l, "", false); err != nil {
		s.log.V(1).Info("free an expired partition lease failed", "partition", p, "error", err.Error())
		return
	}
	s.log.Info("freed an expired partition lease for a replica under its share", "partition", p, "holder", dead)
	s.forget(ctx, leases, dead)
}

// forget deletes the member Lease of holder, a replica whose partition Lease has expired:
// it is gone (see liveMembers), but once its expired partitions are taken or freed nothing
// else shows it, so every replica would count it alive again until its member Lease
// expired by its own clock (renewed apart from its partitions, up to a renewal later; a
// lease duration after it first saw it for a replica just started), shrink its share
// meanwhile and hand partitions back and forth. A replica wrongly forgotten writes its
// member Lease again at its next round. The delete is conditional on the version seen.
func (s *Set) forget(ctx context.Context, leases map[string]*coordinationv1.Lease, holder string) {
	name := s.cfg.memberOf(holder)
	l := leases[name]
	if l == nil || holderOf(l) != holder {
		return
	}
	if s.deleteSeen(ctx, l, "a dead replica's member lease") {
		delete(leases, name)
	}
}

// releaseAbove gives up the highest partitions held above share, for other replicas.
func (s *Set) releaseAbove(share int) {
	held := s.heldPartitions()
	slices.Sort(held)
	for len(held) > share {
		p := held[len(held)-1]
		held = held[:len(held)-1]
		s.log.Info("releasing a partition above the fair share", "partition", p, "share", share)
		s.end(p, true)
	}
}

// stop ends every hold, waits for the work in flight, and releases the Leases.
func (s *Set) stop() {
	release := !s.cfg.KeepOnStop
	for _, p := range s.heldPartitions() {
		s.end(p, release)
	}
	s.releases.Wait() // every hold's work has returned and its Lease is released
	if release {
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.RetryPeriod)
		defer cancel()
		member := s.newLease(s.cfg.memberName(), RoleMember)
		leaseWrites.Inc()
		if err := client.IgnoreNotFound(s.c.Delete(ctx, member)); err != nil {
			s.log.Info("delete the member lease failed; it expires", "error", err.Error())
		}
	}
}
