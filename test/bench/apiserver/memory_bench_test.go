package apiserver_test

import (
	"testing"
	"time"

	"valkey.io/operator/test/bench"
)

// benchMemory reads RSS from /proc and the heap from the metrics endpoint.
func benchMemory(b *testing.B) {
	r := operator(b, 334, 2, true)
	if _, err := r.waitQuiet(10*time.Second, 5*time.Minute); err != nil {
		b.Fatal(err)
	}
	samples, err := bench.ScrapeAll(r.ctrls)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range r.ctrls {
		mem, err := bench.ReadMemory(c.Pid())
		if err != nil {
			b.Fatal(err)
		}
		s := samples[c.Name]
		b.ReportMetric(bench.MiB(mem.RSS), c.Name+"-rss-MiB")
		b.ReportMetric(bench.MiB(s.HeapInuse), c.Name+"-heap-inuse-MiB")
		b.Logf("  %s at %d nodes + %d unrelated objects: %s, heap in use %.1f MiB, heap allocated %.1f MiB",
			c.Name, r.nodes(), unrelated(), mem, bench.MiB(s.HeapInuse), bench.MiB(s.HeapAlloc))
	}
}
