package failover

import (
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"valkey.io/operator/topologycontroller/round"
)

// failoverKey names a primary being failed over: its cluster and its ValkeyNode.
type failoverKey struct {
	cluster types.UID
	node    string
}

// failoverTry is the state of one primary's failover: the try under way (started is set)
// and the failures in a row, with the time the next try may start. It is kept in memory
// only: after a restart of the controller the first try comes at once.
type failoverTry struct {
	to       string // the replica asked to take over
	started  time.Time
	failures int
	lastErr  string
	retryAt  time.Time
}

func (t failoverTry) running() bool { return !t.started.IsZero() }

// describe says why a failover of name waits, for conditions and progress messages.
func (t failoverTry) describe(name string, now time.Time) string {
	return fmt.Sprintf("failover of %s to %s did not complete %d time(s) (last: %s); next try in %s",
		name, t.to, t.failures, t.lastErr, t.retryAt.Sub(now).Round(time.Second))
}

// failoverTries holds the failover state of every primary the controller fails over.
type failoverTries struct {
	mu    sync.Mutex
	tries map[failoverKey]failoverTry
}

func newFailoverTries() *failoverTries {
	return &failoverTries{tries: map[failoverKey]failoverTry{}}
}

func (f *failoverTries) get(k failoverKey) failoverTry {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tries[k]
}

// start records a try under way toward the replica to.
func (f *failoverTries) start(k failoverKey, to string, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.tries[k]
	t.to, t.started = to, now
	f.tries[k] = t
}

// fail ends the try under way as failed and sets the next try after base·2^(failures-1),
// at most maxDelay.
func (f *failoverTries) fail(k failoverKey, why string, base, maxDelay time.Duration, now time.Time) failoverTry {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.tries[k]
	t.started = time.Time{}
	t.failures++
	t.lastErr = why
	t.retryAt = now.Add(round.Doubling(base, maxDelay, t.failures))
	f.tries[k] = t
	return t
}

// of returns the failovers of one cluster.
func (f *failoverTries) of(cluster types.UID) map[failoverKey]failoverTry {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[failoverKey]failoverTry{}
	for k, t := range f.tries {
		if k.cluster == cluster {
			out[k] = t
		}
	}
	return out
}

func (f *failoverTries) forget(k failoverKey) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.tries, k)
}
