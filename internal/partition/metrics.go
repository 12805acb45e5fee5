package partition

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// leaseWrites counts the writes of partition and member Leases: the price of sharing the
// work, which a settled cluster's own objects do not pay.
var leaseWrites = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "valkey_partition_lease_writes_total",
	Help: "Writes (create, update, delete) of the partition and member Leases by this replica.",
})

func init() { metrics.Registry.MustRegister(leaseWrites) }
