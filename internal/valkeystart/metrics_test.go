package valkeystart

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"valkey.io/operator/internal/volumeusage"
)

// The metrics report the data directory's file system as statfs sees it.
func TestMetricsMeasureTheDataDirectory(t *testing.T) {
	dir := t.TempDir()
	var state atomic.Pointer[PersistenceState]
	srv := httptest.NewServer(handlerOf(t, dir, &state))
	defer srv.Close()
	f, err := volumeusage.Fetch(context.Background(), srv.Client(), srv.URL+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	used, capacity, err := volumeusage.Measure(dir)
	if err != nil {
		t.Fatal(err)
	}
	if f.CapacityBytes != capacity || f.UsedBytes <= 0 || f.UsedBytes > capacity || f.Persistence != volumeusage.PersistenceUnknown {
		t.Fatalf("scraped %+v, statfs used %d of %d; want the same capacity and no persistence state before the server answers", f, used, capacity)
	}
	state.Store(NewPersistenceState(true, false, false))
	if f, err = volumeusage.Fetch(context.Background(), srv.Client(), srv.URL+"/metrics"); err != nil || f.Persistence != "rdb" {
		t.Fatalf("a failed BGSAVE: %+v, %v", f, err)
	}
}

// BenchmarkMetricsScrape is the cost in the pod of one read of the metrics by the volume
// controller (every --usage-interval, 10 s: 360 an hour): a statfs, the persistence state,
// the text format, over HTTP on loopback.
func BenchmarkMetricsScrape(b *testing.B) {
	var state atomic.Pointer[PersistenceState]
	state.Store(NewPersistenceState(false, true, false))
	srv := httptest.NewServer(handlerOf(b, b.TempDir(), &state))
	defer srv.Close()
	cl := srv.Client()
	b.ReportAllocs()
	for b.Loop() {
		resp, err := cl.Get(srv.URL + volumeusage.Path)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
}

// handlerOf is MetricsHandler without the server's own figures.
func handlerOf(t testing.TB, dir string, state *atomic.Pointer[PersistenceState]) http.Handler {
	t.Helper()
	h, err := MetricsHandler(dir, state)
	if err != nil {
		t.Fatal(err)
	}
	return h
}
