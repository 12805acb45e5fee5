package bench

import (
	"context"
	"sync"
)

// ForEach calls fn for 0..n-1 on the given number of goroutines and returns the first
// error, after which no new call starts.
func ForEach(ctx context.Context, n, goroutines int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan int)
	errs := make(chan error, goroutines)
	var wg sync.WaitGroup
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if err := fn(ctx, i); err != nil {
					errs <- err
					cancel()
					return
				}
			}
		}()
	}
	func() {
		defer close(work)
		for i := range n {
			select {
			case work <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	return <-errs
}
