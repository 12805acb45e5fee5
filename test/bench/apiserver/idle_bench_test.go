package apiserver_test

import (
	"testing"
	"time"

	"valkey.io/operator/test/bench"
)

// benchIdleWrites waits for quiet, counts a window, restarts and counts the first window.
func benchIdleWrites(b *testing.B) {
	r := operator(b, 100, 2, false)
	settle, err := r.waitQuiet(10*time.Second, 5*time.Minute)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("%d nodes: no write for 10 s, %.0f s after the fan-out was measured", r.nodes(), settle.Seconds())
	before, err := bench.ScrapeAll(r.ctrls)
	if err != nil {
		b.Fatal(err)
	}
	window := time.NewTimer(*idleWindow)
	<-window.C
	after, err := bench.ScrapeAll(r.ctrls)
	if err != nil {
		b.Fatal(err)
	}
	perMinute := time.Minute.Seconds() / idleWindow.Seconds()
	for _, name := range bench.Binaries {
		w := after[name].Minus(before[name])
		b.ReportMetric(w.Writes()*perMinute, name+"-idle-writes/min")
		b.Logf("  idle %s: %.1f writes per minute (%s over %s)", name, w.Writes()*perMinute, w, *idleWindow)
	}

	bench.StopAll(r.ctrls)
	r.ctrls = nil
	start := time.Now()
	ctrls, err := bench.StartAll(r.srv.launch())
	if err != nil {
		b.Fatal(err)
	}
	r.ctrls = ctrls
	b.Logf("restarted: ready in %.1f s", time.Since(start).Seconds())
	window.Reset(time.Until(start.Add(*idleWindow)))
	<-window.C
	first, err := bench.ScrapeAll(ctrls)
	if err != nil {
		b.Fatal(err)
	}
	for _, name := range bench.Binaries {
		w := first[name]
		b.ReportMetric(w.Writes(), name+"-restart-writes")
		b.Logf("  after restart, %s: %.0f writes in its first %s (%s)", name, w.Writes(), *idleWindow, w)
	}
}
