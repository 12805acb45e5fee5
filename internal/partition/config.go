// Package partition shares work among several active replicas of a controller: the keys
// (a ValkeyCluster's namespace/name) are hashed into a fixed number of partitions, and each
// partition is held by at most one replica through a coordination.k8s.io Lease. Each
// replica also renews a member Lease, so that every replica knows how many are alive and
// holds its fair share, ceil(partitions/replicas); a replica above its share releases
// partitions for the others to take.
//
// A replica acts on a partition only while its hold is valid by its own clock: the local
// time its last successful renewal was sent plus RenewDeadline. Another replica takes a
// partition over only after it has seen the Lease unchanged for LeaseDuration by its own
// clock. With RenewDeadline < LeaseDuration and clocks that run at the same rate (no
// agreement on the time of day is needed), the two holds never overlap. When a hold ends,
// the contexts of the work in flight under it are cancelled and the partition is released
// only after that work has returned.
package partition

import (
	"errors"
	"fmt"
	"hash/fnv"
	"time"
)

// Config is one replica's view of a partitioned set of Leases.
type Config struct {
	// Name prefixes the Leases: <Name>-p<NN> per partition and <Name>-m-<Identity> per replica.
	Name string
	// Namespace holds the Leases (the operator's own).
	Namespace string
	// Identity names this replica (its pod's name); unique among the replicas.
	Identity string
	// Partitions is the number of partitions: the most replicas that can share the work.
	Partitions int
	// LeaseDuration is how long a Lease seen unchanged is still held by its holder.
	LeaseDuration time.Duration
	// RenewDeadline is how long after its last successful renewal this replica still acts on
	// a partition; it must be shorter than LeaseDuration.
	RenewDeadline time.Duration
	// RetryPeriod is the period of the loop that renews, acquires and releases Leases.
	RetryPeriod time.Duration
	// KeepOnStop leaves the Leases held when the replica stops, as a crash would (tests);
	// otherwise they are released once the work in flight has returned.
	KeepOnStop bool
}

// Validate checks the settings.
func (c Config) Validate() error {
	var errs []error
	if c.Partitions < 1 {
		errs = append(errs, errors.New("partitions must be at least 1"))
	}
	if c.Name == "" || c.Namespace == "" || c.Identity == "" {
		errs = append(errs, errors.New("partitioned leases need a name, a namespace (--partition-namespace, $POD_NAMESPACE in a pod) and this replica's identity (--identity, $POD_NAME in a pod)"))
	}
	if c.RetryPeriod <= 0 || c.RenewDeadline <= c.RetryPeriod || c.LeaseDuration <= c.RenewDeadline {
		errs = append(errs, fmt.Errorf("partition timings must be 0 < retry period (%s) < renew deadline (%s) < lease duration (%s)", c.RetryPeriod, c.RenewDeadline, c.LeaseDuration))
	}
	return errors.Join(errs...)
}

// Of is the partition of key (a ValkeyCluster's namespace/name) among n partitions: a
// stable hash (FNV-1a), the same in every replica and every release.
func Of(key string, n int) int {
	if n <= 1 {
		return 0
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return int(h.Sum32() % uint32(n)) //nolint:gosec // n is a small positive count
}

// leaseName is the Lease of partition p.
func (c Config) leaseName(p int) string { return fmt.Sprintf("%s-p%02d", c.Name, p) }

// memberName is the Lease that shows this replica alive.
func (c Config) memberName() string { return c.memberOf(c.Identity) }

// memberOf is the Lease that shows the replica identity alive.
func (c Config) memberOf(identity string) string { return c.Name + "-m-" + identity }

// share is the number of partitions a replica holds when live replicas are alive.
func (c Config) share(live int) int {
	if live < 1 {
		live = 1
	}
	return (c.Partitions + live - 1) / live
}
