package apiserver_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"valkey.io/operator/test/bench"
)

// floors measures each binary's memory floor on the settled objects of r: its caches as
// the binary builds them, no controller (cmd/cachefloor), started once the controllers
// were measured and read after the same settled window, beside the controller's memory
// read again at that moment. What a controller holds above its floor is its own; the floor
// is what caching these objects costs in a process of these libraries.
func (r *scaleRun) floors(b *testing.B) error {
	b.Helper()
	if !*scaleFloors {
		return nil
	}
	l := r.srv.launch()
	l.Dir = bench.FloorDir(l.Dir)
	var floors []*bench.Controller
	defer func() { bench.StopAll(floors) }()
	for _, name := range bench.Binaries {
		f, err := bench.StartController(l, name)
		if err != nil {
			return fmt.Errorf("floor of %s: %w", name, err)
		}
		floors = append(floors, f)
	}
	time.Sleep(*idleWindow)          // settled as the controllers were when they were measured
	own := map[string]bench.Memory{} // each binary's first process, read again now
	for _, c := range r.ctrls {
		if _, seen := own[c.Name]; !seen {
			m, err := bench.ReadMemory(c.Pid())
			if err != nil {
				return err
			}
			own[c.Name] = m
		}
	}
	for _, f := range floors {
		m, err := bench.ReadMemory(f.Pid())
		if err != nil {
			return err
		}
		if *heapProfiles != "" {
			if err := f.SaveHeapProfile(filepath.Join(*heapProfiles, f.Name+"-floor.heap.pb.gz")); err != nil {
				return err
			}
		}
		c := own[f.Name]
		b.ReportMetric(bench.MiB(m.RSS), f.Name+"-floor-rss-MiB")
		b.Logf("  %s's floor (its caches, no controller) after %s: %s; the controller at the same moment: %s, anonymous %.1f MiB above its floor's",
			f.Name, *idleWindow, m, c, bench.MiB(c.Anon-m.Anon))
	}
	return nil
}
