// Command cachefloor is a benchmark's floor of memory (BenchmarkScale; built by the
// benchmarks, never deployed): one controller's caches as its binary builds them (the same
// manager, scheme, cache filters and transforms, garbage collector settings), with no
// controller running. Its name picks the controller: a copy or link named
// volume-controller, workload-controller or topology-controller. It takes that binary's
// shared flags, ignores the two the benchmarks add to one of them, and reports ready once
// every cache has synced.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"valkey.io/operator/cmd/internal/options"
)

func main() {
	name := filepath.Base(os.Args[0])
	f, ok := floors[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "cachefloor: run it as one of the controllers' names, not %q\n", name)
		os.Exit(2)
	}
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	options.Flags(fs)
	fs.String("start-image", "", "ignored (the workload controller's)")
	fs.String("partition-namespace", "", "ignored (the topology controller's)")
	var s options.Settings[noOptions]
	options.Main(name, fs, &s, func() error {
		return options.Start(name, s.Manager, f.cache(), func(mgr ctrl.Manager) error {
			return openInformers(mgr.GetCache(), f.watches)
		})
	})
}

// noOptions: the floor has no controller options.
type noOptions struct{}

func (noOptions) Validate() error { return nil }

// openInformers starts the cache's informer of each kind (the manager's readiness waits for
// them to sync), as the controller's watches and reads would.
func openInformers(c cache.Cache, kinds []client.Object) error {
	for _, obj := range kinds {
		if _, err := c.GetInformer(context.Background(), obj); err != nil {
			return fmt.Errorf("informer of %T: %w", obj, err)
		}
	}
	return nil
}
