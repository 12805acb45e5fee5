package partition

import (
	"context"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// enqueuer adds the requests of a gained partition to one controller's queue.
type enqueuer struct {
	ctx    context.Context
	queue  workqueue.TypedRateLimitingInterface[reconcile.Request]
	mapper func(context.Context, int) []reconcile.Request
}

func (e *enqueuer) enqueue(p int) {
	for _, r := range e.mapper(e.ctx, p) {
		e.queue.Add(r)
	}
}

// Source is a controller source that enqueues mapper's requests for every partition this
// replica gains, and for those it holds when the controller starts: the work of a
// partition handed over is picked up at once, not at its next event.
func (s *Set) Source(mapper func(ctx context.Context, partition int) []reconcile.Request) source.Source {
	return source.Func(func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		e := &enqueuer{ctx: ctx, queue: q, mapper: mapper}
		s.mu.Lock()
		s.hooks = append(s.hooks, e)
		var held []int
		for p := range s.cfg.Partitions {
			if s.validLocked(p) {
				held = append(held, p)
			}
		}
		s.mu.Unlock()
		for _, p := range held {
			go e.enqueue(p)
		}
		return nil
	})
}
