package migration

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// What the moves did to each ValkeyCluster (docs/contract.md, "Topology controller:
// metrics"); the migrations' results are counted from their events by the controller.
var (
	slotsMigrated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "valkey_cluster_slots_migrated_total",
		Help: "Slots given to another primary: key by key once their keys moved (SETSLOT NODE), atomically once the server took the job (CLUSTER MIGRATESLOTS).",
	}, []string{"namespace", "cluster"})
	keysMigrated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "valkey_cluster_keys_migrated_total",
		Help: "Keys moved by key-by-key slot migration (MIGRATE, then deleted on the source once a replica of the target had them); atomic migration moves keys inside the servers and is not counted here.",
	}, []string{"namespace", "cluster"})
)

func init() {
	metrics.Registry.MustRegister(slotsMigrated, keysMigrated)
}
