package sharding_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// recorder sees every ValkeyCluster reconcile that runs in either manager: which manager
// ran it, when it started, and whether another was in flight for the same cluster.
type recorder struct {
	mu       sync.Mutex
	inflight map[string]string // cluster → the manager reconciling it
	overlaps []string
	// starts[manager][cluster] are the start times of that manager's reconciles.
	starts map[string]map[string][]time.Time
}

func newRecorder() *recorder {
	return &recorder{inflight: map[string]string{}, starts: map[string]map[string][]time.Time{}}
}

// middleware wraps the cluster reconciler of the manager named by.
func (rec *recorder) middleware(by string) func(string, reconcile.Reconciler) reconcile.Reconciler {
	return func(name string, r reconcile.Reconciler) reconcile.Reconciler {
		if name != "topology" {
			return r
		}
		return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			rec.begin(by, req.String())
			defer rec.end(req.String())
			return r.Reconcile(ctx, req)
		})
	}
}

func (rec *recorder) begin(by, key string) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if other, ok := rec.inflight[key]; ok {
		rec.overlaps = append(rec.overlaps, fmt.Sprintf("%s by %s while %s reconciles it", key, by, other))
	}
	rec.inflight[key] = by
	if rec.starts[by] == nil {
		rec.starts[by] = map[string][]time.Time{}
	}
	rec.starts[by][key] = append(rec.starts[by][key], time.Now())
}

func (rec *recorder) end(key string) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	delete(rec.inflight, key)
}

// Overlaps are the reconciles that started while the other manager reconciled the cluster.
func (rec *recorder) Overlaps() []string {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]string(nil), rec.overlaps...)
}

// Clusters are the clusters the manager by has reconciled.
func (rec *recorder) Clusters(by string) []string {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var out []string
	for key := range rec.starts[by] {
		out = append(out, key)
	}
	return out
}

// FirstSince is the start of the first reconcile of key by the manager by at or after t
// (zero when none).
func (rec *recorder) FirstSince(by, key string, t time.Time) time.Time {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, s := range rec.starts[by][key] {
		if !s.Before(t) {
			return s
		}
	}
	return time.Time{}
}
