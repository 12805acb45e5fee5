// Package volumeusage is how full a node's /data is: measured in the pod by valkey-start,
// served there on its metrics endpoint (Prometheus text), and read from it by the volume
// controller (see docs/contract.md, "Volume usage and automatic growth").
package volumeusage

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The metrics valkey-start serves about its data directory and its server's persistence.
const (
	// MetricUsed is the bytes in use on the data directory's file system.
	MetricUsed = "valkey_data_volume_used_bytes"
	// MetricCapacity is the bytes the server can use there: used plus available to a
	// non-root user (the file system's reserve for root excluded, as df counts it).
	MetricCapacity = "valkey_data_volume_capacity_bytes"
	// MetricPersistenceFailing is 1 while the server's last save of that kind (label kind:
	// rdb, the last BGSAVE; aof, the last AOF write) failed, 0 otherwise; absent while the
	// server does not answer.
	MetricPersistenceFailing = "valkey_persistence_failing"
	// LabelKind is MetricPersistenceFailing's label.
	LabelKind = "kind"
)

// Persistence states in Figure.Persistence.
const (
	PersistenceOK      = "ok"
	PersistenceUnknown = ""
)

// Figure is one measurement of a node's /data.
type Figure struct {
	UsedBytes     int64
	CapacityBytes int64
	// Persistence is PersistenceOK, the kinds that fail joined by "," ("rdb", "aof",
	// "rdb,aof"), or PersistenceUnknown while the server does not answer.
	Persistence string
	// At is when the figure was taken.
	At time.Time
}

// Percent is the share of the capacity in use, rounded down (100 when there is no capacity).
func (f Figure) Percent() int32 {
	if f.CapacityBytes <= 0 {
		return 100
	}
	pct := f.UsedBytes * 100 / f.CapacityBytes
	if pct > 100 {
		return 100 // full: a figure above it says nothing more (and would not fit an int32)
	}
	return int32(pct) //nolint:gosec // G115: 0..100 here
}

// Failing tells whether the server reports a failed save.
func (f Figure) Failing() bool {
	return f.Persistence != PersistenceOK && f.Persistence != PersistenceUnknown
}

// Bytes writes a byte count for people, to one decimal in the largest binary unit below it
// ("9.6GiB", "812.3MiB"): the one form of the volume controller's and topology's messages.
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%dB", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f%ciB", float64(n)/float64(div), "KMGTP"[exp])
}

// Measure reads the file system of dir: the bytes in use and the bytes the server can use
// (used plus what is available to a user that is not root).
func Measure(dir string) (used, capacity int64, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, 0, fmt.Errorf("statfs %s: %w", dir, err)
	}
	bsize := int64(st.Bsize)                 //nolint:unconvert // int32 on some platforms
	used = int64(st.Blocks-st.Bfree) * bsize //nolint:gosec // block counts fit in int64
	avail := int64(st.Bavail) * bsize        //nolint:gosec // block counts fit in int64
	return used, used + avail, nil
}

// Parse reads a figure from a metrics page in the Prometheus text format; at is when it
// was fetched.
func Parse(r io.Reader, at time.Time) (Figure, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return Figure{}, fmt.Errorf("parse metrics: %w", err)
	}
	f := Figure{At: at}
	var ok1, ok2 bool
	if f.UsedBytes, ok1 = gauge(families[MetricUsed]); !ok1 {
		return Figure{}, fmt.Errorf("no %s in the metrics", MetricUsed)
	}
	if f.CapacityBytes, ok2 = gauge(families[MetricCapacity]); !ok2 {
		return Figure{}, fmt.Errorf("no %s in the metrics", MetricCapacity)
	}
	f.Persistence = persistence(families[MetricPersistenceFailing])
	return f, nil
}

// gauge is the value of a family's only sample.
func gauge(mf *dto.MetricFamily) (int64, bool) {
	if mf == nil || len(mf.GetMetric()) != 1 || mf.GetMetric()[0].GetGauge() == nil {
		return 0, false
	}
	return int64(mf.GetMetric()[0].GetGauge().GetValue()), true
}

// persistence is Figure.Persistence from MetricPersistenceFailing's samples.
func persistence(mf *dto.MetricFamily) string {
	if mf == nil || len(mf.GetMetric()) == 0 {
		return PersistenceUnknown
	}
	var failing []string
	for _, m := range mf.GetMetric() {
		if m.GetGauge().GetValue() == 0 {
			continue
		}
		for _, l := range m.GetLabel() {
			if l.GetName() == LabelKind {
				failing = append(failing, l.GetValue())
			}
		}
	}
	if len(failing) == 0 {
		return PersistenceOK
	}
	return strings.Join(failing, ",")
}

// CollectVolume is the collect[] value that makes valkey-start's /metrics serve the volume's
// figures alone, without the server's (valkey-start's of before the server's figures ignores
// it). Path is the metrics path with it.
const (
	CollectVolume = "volume"
	Path          = "/metrics?collect[]=" + CollectVolume
)

// Fetch reads the figure from a valkey-start metrics endpoint (http://ip:port + Path).
func Fetch(ctx context.Context, cl *http.Client, url string) (Figure, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return Figure{}, err
	}
	resp, err := cl.Do(req)
	if err != nil {
		return Figure{}, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return Figure{}, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return Parse(io.LimitReader(resp.Body, 1<<20), time.Now())
}
