package volumecontroller

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// metricsPrefix prefixes every metric of this controller.
const metricsPrefix = "valkey_volume_controller_"

var (
	resizesStarted = prometheus.NewCounter(prometheus.CounterOpts{
		Name: metricsPrefix + "resizes_started_total",
		Help: "Claims whose storage request the controller raised to a larger node size.",
	})
	resizesFinished = prometheus.NewCounter(prometheus.CounterOpts{
		Name: metricsPrefix + "resizes_finished_total",
		Help: "Resizes that reached the requested capacity (VolumeSized became True after a resize).",
	})
	resizesFailed = prometheus.NewCounter(prometheus.CounterOpts{
		Name: metricsPrefix + "resizes_failed_total",
		Help: "Resizes the storage provider or node reported as failed (VolumeSized became False, ResizeFailed).",
	})
	claimsDesc = prometheus.NewDesc(metricsPrefix+"claims",
		"ValkeyNodes by the state of their volume (the reason of their VolumeReady condition).",
		[]string{"state"}, nil)

	registerOnce sync.Once
)

// claimsCollector counts ValkeyNodes by VolumeReady reason from the cache at scrape time,
// so the figure is right after a restart and for nodes that are gone.
type claimsCollector struct{ reader client.Reader }

func (c claimsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- claimsDesc }

func (c claimsCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var nodes valkeyv1.ValkeyNodeList
	if err := c.reader.List(ctx, &nodes); err != nil {
		ch <- prometheus.NewInvalidMetric(claimsDesc, err)
		return
	}
	counts := map[string]int{}
	for i := range nodes.Items {
		state := "Unknown"
		if cond := status.Get(nodes.Items[i].Status.Conditions, valkeyv1.ConditionVolumeReady); cond != nil {
			state = cond.Reason
		}
		counts[state]++
	}
	for state, n := range counts {
		ch <- prometheus.MustNewConstMetric(claimsDesc, prometheus.GaugeValue, float64(n), state)
	}
}

// registerMetrics adds the controller's metrics to controller-runtime's registry (served
// on the manager's metrics endpoint). Registering twice is a no-op.
func registerMetrics(reader client.Reader) {
	registerOnce.Do(func() {
		metrics.Registry.MustRegister(resizesStarted, resizesFinished, resizesFailed, claimsCollector{reader: reader})
	})
}
