package partition

import (
	"context"
	"sync"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Set is one replica's partitions: the loop that holds their Leases (run it with the
// manager, see Start) and the guard of the work done under them (Begin, Guard).
type Set struct {
	cfg Config
	// c reads and writes the Leases past any cache: a hold is only as fresh as its read.
	c   client.Client
	log logr.Logger

	mu    sync.Mutex
	held  map[int]*hold
	seen  map[string]observation
	hooks []*enqueuer
	// memberRenewed is when the member Lease was last written.
	memberRenewed time.Time
	// waitingFor is why this replica took no partition in its last round ("" when it may).
	waitingFor string
	// releases are the holds being given up (see end).
	releases sync.WaitGroup
	// base is the loop's context, the parent of every hold's context.
	base context.Context
	// wakeup runs the loop's next round before its period (see wake).
	wakeup chan struct{}
}

// hold is this replica's hold of one partition.
type hold struct {
	p int
	// renewed is the local time the last successful write of its Lease was sent.
	renewed time.Time
	// lease is the Lease after that write (its resourceVersion guards the next one).
	lease  *coordinationv1.Lease
	ctx    context.Context
	cancel context.CancelFunc
	// ending is set once the hold is being given up: no work starts under it any more.
	ending   bool
	inflight sync.WaitGroup
	timer    *time.Timer
}

// observation is a Lease as this replica last saw it, and when (by its own clock) it last
// saw it change.
type observation struct {
	rv     string
	holder string
	at     time.Time
}

// New is the partition set of cfg; c must read from the API server (a plain client), not
// from a cache. When c is a client.WithWatch the set watches its Leases, and a dead
// replica's partitions are taken a lease duration after their last renewal instead of up
// to two retry periods later.
func New(cfg Config, c client.Client, log logr.Logger) (*Set, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Set{cfg: cfg, c: c, log: log.WithValues("identity", cfg.Identity), held: map[int]*hold{}, seen: map[string]observation{}, wakeup: make(chan struct{}, 1)}, nil
}

// Partitions is the number of partitions.
func (s *Set) Partitions() int { return s.cfg.Partitions }

// Of is the partition of key.
func (s *Set) Of(key string) int { return Of(key, s.cfg.Partitions) }

// Holds reports whether this replica may act on key now.
func (s *Set) Holds(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.validLocked(s.Of(key))
}

// Held lists the partitions this replica may act on now.
func (s *Set) Held() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int
	for p := range s.cfg.Partitions {
		if s.validLocked(p) {
			out = append(out, p)
		}
	}
	return out
}

// validLocked reports whether work may start under partition p.
func (s *Set) validLocked(p int) bool {
	h := s.held[p]
	return h != nil && !h.ending && time.Since(h.renewed) < s.cfg.RenewDeadline
}

// Begin starts work on key: it returns a context that is cancelled when the partition's
// hold ends, and done, which the work calls when it has returned. ok is false when this
// replica does not hold key's partition: the work must not start.
func (s *Set) Begin(ctx context.Context, key string) (wctx context.Context, done func(), ok bool) {
	p := s.Of(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.validLocked(p) {
		return ctx, func() {}, false
	}
	h := s.held[p]
	h.inflight.Add(1)
	wctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(h.ctx, cancel)
	return wctx, func() {
		stop()
		cancel()
		h.inflight.Done()
	}, true
}

// Guard wraps r so that it runs only for the requests whose key (see keyOf) is in a
// partition this replica holds, with a context cancelled when that hold ends. A request
// of another partition is dropped without a requeue: its holder handles it. keyOf returns
// "" for a request with nothing left to do.
func (s *Set) Guard(r reconcile.Reconciler, keyOf func(context.Context, reconcile.Request) (string, error)) reconcile.Reconciler {
	return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		key, err := keyOf(ctx, req)
		if err != nil || key == "" {
			return reconcile.Result{}, err
		}
		wctx, done, ok := s.Begin(ctx, key)
		if !ok {
			return reconcile.Result{}, nil
		}
		defer done()
		return r.Reconcile(wctx, req)
	})
}

// NeedLeaderElection is true, so that partitions are held only where the controllers run:
// with leader election off (the topology controller's binary turns it off when partitioned)
// every replica runs the loop; with it on, only the leader does.
func (s *Set) NeedLeaderElection() bool { return true }

// ClusterKey is the partition key of every object of the cluster named name in namespace
// (the cluster, its nodes, backups and schedules): one replica handles them all.
func ClusterKey(namespace, name string) string {
	return namespace + "/" + name
}
