package serverwatch

import (
	"context"
	"crypto/x509"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/topologycontroller/round"
)

// workers bound the clusters looked at at once.
const workers = 8

// Target is what the watcher needs of a cluster, as its last round found it.
type Target struct {
	// Addrs are the servers that answered the round (ip:port), asked in this order.
	Addrs []string
	Creds round.Credentials
	// Roots, when set, are the CA the servers' TLS certificates are verified against.
	Roots *x509.CertPool
}

// Watcher looks at the servers of the clusters its reconciler registered.
type Watcher struct {
	// Interval is how often each cluster is looked at (0: never).
	Interval time.Duration
	// Expiry forgets a cluster no round registered for that long (its reconciles moved to
	// another replica, or it is gone).
	Expiry                  time.Duration
	DialTimeout, CmdTimeout time.Duration

	mu       sync.Mutex
	clusters map[types.NamespacedName]*watched
	wake     chan event.GenericEvent
	// Looks counts the CLUSTER NODES sent (not in round.CommandsSent, which counts the
	// reconciles'); Wakes the reconciles woken.
	Looks, Wakes atomic.Int64
}

// watched is one cluster: its target, its own clients and the digest last seen. The
// clients belong to the worker looking at it (busy): a new target waits in next, and a
// cluster forgotten meanwhile (gone) has its clients closed by that worker.
type watched struct {
	target Target
	next   *Target
	seen   time.Time // when a round last registered it
	conns  *round.Conns
	digest uint64
	looked bool
	busy   bool
	gone   bool
}

// New is a watcher that looks every interval and forgets a cluster not registered for expiry.
func New(interval, expiry, dialTimeout, cmdTimeout time.Duration) *Watcher {
	return &Watcher{Interval: interval, Expiry: expiry, DialTimeout: dialTimeout, CmdTimeout: cmdTimeout,
		clusters: map[types.NamespacedName]*watched{}, wake: make(chan event.GenericEvent, 1024)}
}

// Source wakes the reconciles of the clusters whose servers changed.
func (w *Watcher) Source() source.Source {
	return source.Channel(w.wake, &handler.EnqueueRequestForObject{})
}

// Watch registers (or refreshes) a cluster after a round. A new target (other servers,
// credentials or CA) starts afresh: the round just saw the servers as they are.
func (w *Watcher) Watch(key types.NamespacedName, t Target) {
	if w == nil || w.Interval <= 0 || len(t.Addrs) == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	c := w.clusters[key]
	switch {
	case c == nil:
		c = &watched{target: t, conns: w.newConns(t)}
		w.clusters[key] = c
	case !sameTarget(c.target, t):
		c.next = &t
	default:
		c.next = nil
	}
	c.seen = time.Now()
}

// Forget stops looking at a cluster (deleted, paused).
func (w *Watcher) Forget(key types.NamespacedName) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if c := w.clusters[key]; c != nil {
		delete(w.clusters, key)
		c.drop()
	}
}

// drop closes c's clients, or has the worker looking at it close them. Under w.mu.
func (c *watched) drop() {
	if c.busy {
		c.gone = true
		return
	}
	c.conns.Close()
}

// NeedLeaderElection is false: every replica looks at the clusters it reconciles (partitions).
func (w *Watcher) NeedLeaderElection() bool { return false }

// Start looks at the registered clusters every interval until ctx ends.
func (w *Watcher) Start(ctx context.Context) error {
	if w.Interval <= 0 {
		return nil
	}
	tick := time.NewTicker(w.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			w.closeAll()
			return nil
		case <-tick.C:
			w.lookAll(ctx)
		}
	}
}

// lookAll looks at every registered cluster once, workers at a time.
func (w *Watcher) lookAll(ctx context.Context) {
	jobs := make(chan types.NamespacedName)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for key := range jobs {
				w.look(ctx, key)
			}
		}()
	}
	for _, key := range w.current() {
		jobs <- key
	}
	close(jobs)
	wg.Wait()
}

// current are the registered clusters, the expired ones forgotten.
func (w *Watcher) current() []types.NamespacedName {
	w.mu.Lock()
	defer w.mu.Unlock()
	keys := make([]types.NamespacedName, 0, len(w.clusters))
	for key, c := range w.clusters {
		if time.Since(c.seen) > w.Expiry {
			delete(w.clusters, key)
			c.drop()
			continue
		}
		keys = append(keys, key)
	}
	return keys
}

// look asks the cluster's servers in order for CLUSTER NODES and wakes its reconcile when
// the digest changed since the last look.
func (w *Watcher) look(ctx context.Context, key types.NamespacedName) {
	c := w.take(key)
	if c == nil {
		return
	}
	d := digestOf(ctx, c.conns, c.target.Addrs, w.CmdTimeout)
	changed := c.looked && d != c.digest
	c.digest, c.looked = d, true
	if !w.release(c) || !changed {
		return
	}
	w.Wakes.Add(1)
	vc := &valkeyv1.ValkeyCluster{}
	vc.Namespace, vc.Name = key.Namespace, key.Name
	select {
	case w.wake <- event.GenericEvent{Object: vc}:
	case <-ctx.Done():
	}
}

// take marks the cluster busy for this worker and moves it to its new target, if any; nil
// when it is not registered.
func (w *Watcher) take(key types.NamespacedName) *watched {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := w.clusters[key]
	if c == nil {
		return nil
	}
	c.busy = true
	if c.next != nil {
		c.conns.Close()
		c.target, c.next, c.conns, c.looked = *c.next, nil, w.newConns(*c.next), false
	}
	return c
}

// release ends the worker's look; false when the cluster was forgotten meanwhile (its
// clients are closed then).
func (w *Watcher) release(c *watched) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	c.busy = false
	if c.gone {
		c.conns.Close()
		return false
	}
	return true
}

func (w *Watcher) closeAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for key, c := range w.clusters {
		delete(w.clusters, key)
		c.drop()
	}
}

func (w *Watcher) newConns(t Target) *round.Conns {
	cs := round.NewConns(t.Creds, w.DialTimeout, w.CmdTimeout)
	cs.CountIn(&w.Looks)
	if t.Roots != nil {
		cs.UseTLS(t.Roots)
	}
	return cs
}

func sameTarget(a, b Target) bool {
	return slices.Equal(a.Addrs, b.Addrs) && a.Creds == b.Creds && a.Roots.Equal(b.Roots)
}
