package valkeystart

import (
	"context"
	"errors"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"valkey.io/operator/internal/volumeusage"
)

var (
	usedDesc = prometheus.NewDesc(volumeusage.MetricUsed,
		"Bytes in use on the file system of the server's data directory.", nil, nil)
	capacityDesc = prometheus.NewDesc(volumeusage.MetricCapacity,
		"Bytes the server can use on the file system of its data directory (used plus available).", nil, nil)
	failingDesc = prometheus.NewDesc(volumeusage.MetricPersistenceFailing,
		"1 while the server's last save of this kind failed (rdb: BGSAVE; aof: an AOF write); the server then refuses writes with MISCONF.",
		[]string{volumeusage.LabelKind}, nil)
)

// persistenceState is what the server last said of its saves (see watchAOF, which reads
// INFO persistence every AOFWatchPeriod); nil while it does not answer.
type persistenceState struct {
	rdbFailing, aofEnabled, aofFailing bool
}

// persistenceOf reads the state from INFO persistence.
func persistenceOf(info map[string]string) *persistenceState {
	return &persistenceState{
		rdbFailing: info["rdb_last_bgsave_status"] == "err",
		aofEnabled: info["aof_enabled"] == "1",
		aofFailing: info["aof_last_write_status"] == "err",
	}
}

// volumeCollector measures the data directory at each scrape (one statfs) and reports the
// server's persistence as last read.
type volumeCollector struct {
	dir   string
	state *atomic.Pointer[persistenceState]
}

func (c volumeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- usedDesc
	ch <- capacityDesc
	ch <- failingDesc
}

func (c volumeCollector) Collect(ch chan<- prometheus.Metric) {
	used, capacity, err := volumeusage.Measure(c.dir)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(usedDesc, err)
	} else {
		ch <- prometheus.MustNewConstMetric(usedDesc, prometheus.GaugeValue, float64(used))
		ch <- prometheus.MustNewConstMetric(capacityDesc, prometheus.GaugeValue, float64(capacity))
	}
	st := c.state.Load()
	if st == nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(failingDesc, prometheus.GaugeValue, flag(st.rdbFailing), "rdb")
	if st.aofEnabled {
		ch <- prometheus.MustNewConstMetric(failingDesc, prometheus.GaugeValue, flag(st.aofFailing), "aof")
	}
}

func flag(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// PersistenceState is what a server last said of its saves (nil while it does not answer).
type PersistenceState = persistenceState

// NewPersistenceState is a state: which saves fail, and whether AOF is on.
func NewPersistenceState(rdbFailing, aofEnabled, aofFailing bool) *PersistenceState {
	return &persistenceState{rdbFailing: rdbFailing, aofEnabled: aofEnabled, aofFailing: aofFailing}
}

// MetricsHandler serves /metrics: the usage of dir's file system, measured at each scrape,
// the persistence state as last stored in state and, when server is given, the server's
// own figures (ServerMetrics). A server that does not answer gives redis_up 0; the rest is
// served still. /metrics?collect[]=volume serves the volume's figures alone: what the volume
// controller reads every few seconds from every pod, without querying the server (an
// earlier valkey-start ignores the parameter and serves the same).
func MetricsHandler(dir string, state *atomic.Pointer[PersistenceState], server ...ServerMetrics) (http.Handler, error) {
	volume := prometheus.NewRegistry()
	volume.MustRegister(volumeCollector{dir: dir, state: state})
	all := prometheus.NewRegistry()
	all.MustRegister(volumeCollector{dir: dir, state: state})
	for _, s := range server {
		if err := s.register(all); err != nil {
			return nil, err
		}
	}
	opts := promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}
	volumeOnly, everything := promhttp.HandlerFor(volume, opts), promhttp.HandlerFor(all, opts)
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		if slices.Contains(r.URL.Query()["collect[]"], volumeusage.CollectVolume) {
			volumeOnly.ServeHTTP(w, r)
			return
		}
		everything.ServeHTTP(w, r)
	})
	return mux, nil
}

// serveMetrics serves /metrics and the kubelet's probes (valkeyconf.ReadyPath, AlivePath) on
// w.MetricsAddr until ctx ends or the server stops (done). It never stops the server: an
// address it cannot listen on is logged (the probes then fail: the pod is not Ready).
func (w *Wrapper) serveMetrics(ctx context.Context, done <-chan struct{}) {
	if w.MetricsAddr == "" {
		return
	}
	var server []ServerMetrics
	if w.ServerMetrics {
		server = append(server, ServerMetrics{Addr: w.Addr, OperatorPassword: w.Password, TLS: w.TLS != nil, Timeout: w.DialTimeout})
	}
	handler, err := MetricsHandler(w.DataDir, &w.persistence, server...)
	if err != nil {
		w.logf("metrics: %v (the server's own figures are not reported)", err)
		handler, _ = MetricsHandler(w.DataDir, &w.persistence)
	}
	mux := http.NewServeMux()
	mux.Handle("/", handler)
	probes := w.newProber()
	defer probes.close()
	probes.handle(mux)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, WriteTimeout: 10 * time.Second}
	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", w.MetricsAddr)
	if err != nil {
		w.logf("metrics: %v (the volume's usage is not reported)", err)
		return
	}
	go func() {
		select {
		case <-ctx.Done():
		case <-done:
		}
		_ = srv.Close()
	}()
	if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		w.logf("metrics: %v", err)
	}
}

// summary names the kinds of save that fail ("" when none does).
func (st *persistenceState) summary() string {
	var failing []string
	if st.rdbFailing {
		failing = append(failing, "rdb")
	}
	if st.aofFailing {
		failing = append(failing, "aof")
	}
	return strings.Join(failing, ",")
}
