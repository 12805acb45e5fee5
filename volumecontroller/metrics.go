package volumecontroller

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
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
	autoGrows = prometheus.NewCounter(prometheus.CounterOpts{
		Name: metricsPrefix + "autogrows_total",
		Help: "Claims persistence.autoGrow grew (the volume's usage passed its threshold).",
	})
	usageFetches = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: metricsPrefix + "usage_fetches_total",
		Help: "Reads of valkey-start's metrics on the nodes' pods, by result (ok, error).",
	}, []string{"result"})
	usagePublished = prometheus.NewCounter(prometheus.CounterOpts{
		Name: metricsPrefix + "usage_published_total",
		Help: "Usage figures that changed meaningfully and were published (each costs one ValkeyNode status write).",
	})
	usedDesc = prometheus.NewDesc("valkey_volume_used_bytes",
		"Bytes in use on a node's /data, as last measured in its pod.", []string{"namespace", "node"}, nil)
	capacityDesc = prometheus.NewDesc("valkey_volume_capacity_bytes",
		"Bytes the server can use on a node's /data (used plus available), as last measured in its pod.", []string{"namespace", "node"}, nil)
	failingDesc = prometheus.NewDesc("valkey_volume_persistence_failing",
		"1 while a node's server reports a failed save (BGSAVE or AOF write) and refuses writes with MISCONF.", []string{"namespace", "node"}, nil)
	claimsDesc = prometheus.NewDesc(metricsPrefix+"claims",
		"ValkeyNodes by the state of their volume (the reason of their VolumeReady condition).",
		[]string{"state"}, nil)

	registerOnce sync.Once
)

// claimsCollector counts ValkeyNodes by VolumeReady reason from the cache at scrape time,
// so the figure is right after a restart and for nodes that are gone. It reads the cached
// objects in place (no copy of every node per scrape) and changes nothing.
type claimsCollector struct{ reader client.Reader }

func (c claimsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- claimsDesc }

func (c claimsCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var nodes valkeyv1.ValkeyNodeList
	if err := c.reader.List(ctx, &nodes, client.UnsafeDisableDeepCopy); err != nil {
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
func registerMetrics(reader client.Reader, store *usageStore) {
	theUsage.Store(store)
	registerOnce.Do(func() {
		metrics.Registry.MustRegister(resizesStarted, resizesFinished, resizesFailed, autoGrows, usageFetches, usagePublished,
			claimsCollector{reader: reader}, &usageCollector{})
	})
}

// theUsage is the store the usage metrics read: the latest controller's (one per process).
var theUsage atomic.Pointer[usageStore]

// usageCollector reports every node's latest measured figure.
type usageCollector struct{}

func (usageCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- usedDesc
	ch <- capacityDesc
	ch <- failingDesc
}

func (usageCollector) Collect(ch chan<- prometheus.Metric) {
	store := theUsage.Load()
	if store == nil {
		return
	}
	store.each(func(k types.NamespacedName, u nodeUsage) {
		if !u.measured {
			return
		}
		f := u.latest
		ch <- prometheus.MustNewConstMetric(usedDesc, prometheus.GaugeValue, float64(f.UsedBytes), k.Namespace, k.Name)
		ch <- prometheus.MustNewConstMetric(capacityDesc, prometheus.GaugeValue, float64(f.CapacityBytes), k.Namespace, k.Name)
		failing := 0.0
		if f.Failing() {
			failing = 1
		}
		ch <- prometheus.MustNewConstMetric(failingDesc, prometheus.GaugeValue, failing, k.Namespace, k.Name)
	})
}
