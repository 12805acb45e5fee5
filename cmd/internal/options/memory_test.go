package options

import (
	"runtime/debug"
	"testing"
)

// --memory-limit (the container's limit, as the deploy manifests pass it in bytes) becomes a
// soft limit of 90% of it, unless $GOMEMLIMIT was set.
func TestSoftMemoryLimit(t *testing.T) {
	for _, tc := range []struct {
		arg, gomemlimit string
		want            int64
	}{
		{"", "", 0},
		{"268435456", "", 241591910},
		{"256Mi", "", 241591910},
		{"256Mi", "200MiB", 0},
	} {
		m := load(t, "--memory-limit="+tc.arg)
		if err := m.Validate(); err != nil {
			t.Fatalf("%q: %v", tc.arg, err)
		}
		limit, err := memoryLimit(m.MemoryLimit)
		if err != nil {
			t.Fatal(err)
		}
		if got := softMemoryLimit(limit, tc.gomemlimit); got != tc.want {
			t.Errorf("--memory-limit=%q GOMEMLIMIT=%q: soft limit %d, want %d", tc.arg, tc.gomemlimit, got, tc.want)
		}
	}
}

func TestMemoryLimitValidation(t *testing.T) {
	for _, arg := range []string{"lots", "-1Mi"} {
		if err := load(t, "--memory-limit="+arg).Validate(); err == nil {
			t.Errorf("--memory-limit=%s: accepted", arg)
		}
	}
}

// The pprof endpoints are off unless an address is given.
func TestPprofOffByDefault(t *testing.T) {
	if m := load(t); m.PprofBindAddress != "" {
		t.Errorf("pprof-bind-address defaults to %q", m.PprofBindAddress)
	}
	if m := load(t, "--pprof-bind-address=127.0.0.1:6060"); m.PprofBindAddress != "127.0.0.1:6060" {
		t.Errorf("pprof-bind-address %q", m.PprofBindAddress)
	}
}

func TestGCPercentUnlessGOGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	applyGCPercent("200")
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with $GOGC set the pace was changed to %d", got)
	}
	applyGCPercent("")
	if got := debug.SetGCPercent(100); got != GCPercent {
		t.Errorf("without $GOGC the pace is %d, want %d", got, GCPercent)
	}
}
