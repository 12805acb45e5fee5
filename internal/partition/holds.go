package partition

import (
	"context"
	"slices"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
)

// heldPartitions lists the partitions held and not being given up.
func (s *Set) heldPartitions() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int
	for p, h := range s.held {
		if !h.ending {
			out = append(out, p)
		}
	}
	return out
}

// count is the number of partitions held and not being given up.
func (s *Set) count() int { return len(s.heldPartitions()) }

// has reports whether p is held, or still being given up.
func (s *Set) has(p int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held[p] != nil
}

// gain starts the hold of p, whose Lease l was written at sent, and tells the sources
// registered with Source to enqueue the partition's work.
func (s *Set) gain(p int, sent time.Time, l *coordinationv1.Lease) {
	s.mu.Lock()
	ctx, cancel := context.WithCancel(s.base)
	h := &hold{p: p, renewed: sent, lease: l.DeepCopy(), ctx: ctx, cancel: cancel}
	h.timer = time.AfterFunc(s.cfg.RenewDeadline-time.Since(sent), func() { s.lapse(h) })
	s.held[p] = h
	hooks := slices.Clone(s.hooks)
	s.mu.Unlock()
	s.log.Info("holding a partition", "partition", p, "lease", l.Name)
	for _, e := range hooks {
		go e.enqueue(p)
	}
}

// renewed records a successful renewal of p's Lease sent at sent.
func (s *Set) renewed(p int, sent time.Time, l *coordinationv1.Lease) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.held[p]
	if h == nil || h.ending {
		return
	}
	h.renewed = sent
	h.lease = l.DeepCopy()
	h.timer.Reset(s.cfg.RenewDeadline - time.Since(sent))
}

// lapse ends h when its renew deadline has passed without a renewal.
func (s *Set) lapse(h *hold) {
	s.mu.Lock()
	if s.held[h.p] != h || h.ending {
		s.mu.Unlock()
		return
	}
	if left := s.cfg.RenewDeadline - time.Since(h.renewed); left > 0 {
		h.timer.Reset(left)
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	s.lose(h.p, "no renewal within the renew deadline")
}

// lose ends the hold of p without writing its Lease (it is not, or no longer surely, ours).
func (s *Set) lose(p int, why string) {
	s.log.Info("lost a partition", "partition", p, "reason", why)
	s.end(p, false)
}

// end gives up p: no work starts under it any more, the work in flight is cancelled, and
// once it has returned the Lease is released (release) and the partition forgotten.
func (s *Set) end(p int, release bool) {
	s.mu.Lock()
	h := s.held[p]
	if h == nil || h.ending {
		s.mu.Unlock()
		return
	}
	h.ending = true
	h.timer.Stop()
	h.cancel()
	lease := h.lease
	s.mu.Unlock()
	s.releases.Add(1)
	go func() {
		defer s.releases.Done()
		h.inflight.Wait()
		if release {
			ctx, cancel := context.WithTimeout(context.Background(), s.cfg.RetryPeriod)
			defer cancel()
			if err := s.write(ctx, lease, "", false); err != nil {
				s.log.Info("release a partition lease failed; it expires", "partition", p, "error", err.Error())
			}
		}
		s.mu.Lock()
		if s.held[p] == h {
			delete(s.held, p)
		}
		s.mu.Unlock()
	}()
}

// renewedAt is when p's Lease was last written by this replica.
func (s *Set) renewedAt(p int) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h := s.held[p]; h != nil {
		return h.renewed
	}
	return time.Time{}
}
