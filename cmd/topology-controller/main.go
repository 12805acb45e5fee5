// Command topology-controller runs the topology controller of the Valkey operator.
package main

import (
	"crypto/rand"
	"encoding/hex"
	"os"

	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"

	"valkey.io/operator/cmd/internal/options"
	"valkey.io/operator/topologycontroller"
)

func main() {
	fs := pflag.NewFlagSet(topologycontroller.Name, pflag.ContinueOnError)
	options.Flags(fs)
	d := topologycontroller.DefaultOptions()
	fs.Int("valkey-port", d.ValkeyPort, "port of the Valkey servers at their pod IPs")
	fs.Duration("valkey-dial-timeout", d.DialTimeout, "timeout of connecting to a Valkey server")
	fs.Duration("valkey-command-timeout", d.CommandTimeout, "timeout of one Valkey command (a MIGRATE batch included)")
	fs.Int("migration-batch-size", d.MigrationBatchSize, "keys moved by one MIGRATE during slot migration")
	fs.Int("migration-slots-per-reconcile", d.MigrationSlotsPerReconcile, "slots moved key by key before status is reported and the migration goes on")
	fs.String("migration-mode", d.MigrationMode, "how slots move: auto (atomically with CLUSTER MIGRATESLOTS where both servers are Valkey 9 or later, else key by key) or keys (always key by key)")
	fs.Duration("failover-timeout", d.FailoverTimeout, "how long to wait for a replica to take over after CLUSTER FAILOVER")
	fs.Duration("failover-backoff", d.FailoverBackoff, "wait before a failover that did not complete is tried again (doubles with each failure)")
	fs.Duration("failover-backoff-max", d.FailoverBackoffMax, "longest wait between two tries of a failover")
	fs.Duration("resync-period", d.ResyncPeriod, "how often a settled cluster is checked again in Valkey")
	fs.Duration("server-watch-interval", d.ServerWatchInterval, "how often one server of each cluster is asked for CLUSTER NODES between rounds; a change wakes the cluster's reconcile")
	fs.Duration("backup-catch-up-timeout", d.BackupCatchUpTimeout, "how long a backup waits for the replica it saves to reach its primary's offset at the saved point before it saves the primary instead")
	fs.Duration("backup-cut-timeout", d.BackupCutTimeout, "how long after its last shard is saved a backup waits for every shard's VolumeSnapshot to be cut (slot moves are held meanwhile) before it fails with SnapshotTimeout")
	fs.String("cluster-domain", d.ClusterDomain, "the Kubernetes cluster's DNS domain, in the names of generated certificates")
	fs.Int("max-concurrent-reconciles", d.MaxConcurrentReconciles, "clusters reconciled at once")
	fs.String("operator-namespace", os.Getenv("POD_NAMESPACE"), "namespace every cluster's NetworkPolicy admits to both ports (this controller's: $POD_NAMESPACE by default)")
	fs.Int("partitions", d.Partitions, "partitions of the ValkeyClusters, one Lease each, shared among the active replicas (the most replicas that share the work); 0 is one partition: one replica active, the others waiting (--leader-elect is ignored)")
	fs.String("partition-namespace", os.Getenv("POD_NAMESPACE"), "namespace of the partition Leases ($POD_NAMESPACE by default, else --leader-election-namespace)")
	fs.String("identity", identity(), "this replica's name among the others ($POD_NAME, else the host name, and a random suffix new at each start)")
	fs.Duration("partition-lease-duration", d.PartitionLeaseDuration, "how long a partition Lease not renewed stays with its holder: a replica gone hands its clusters over after it")
	fs.Duration("partition-renew-deadline", d.PartitionRenewDeadline, "how long after its last renewal a replica still acts on a partition (shorter than the lease duration)")
	fs.Duration("partition-retry-period", d.PartitionRetryPeriod, "period of the loop that renews, acquires and releases the partition Leases")
	var s options.Settings[topologycontroller.Options]
	options.Main(topologycontroller.Name, fs, &s, func() error {
		// Every replica runs the partition loop, and none is elected: with --partitions=0 one
		// partition (one Lease) makes one replica active, so that a rollout between 0 and N
		// is guarded like any change of the count (docs/contract.md, "Partitions").
		s.LeaderElect = false
		if s.Options.Partitions == 0 {
			s.Options.Partitions = 1
		}
		if s.Options.PartitionNamespace == "" {
			// Outside a pod: the namespace given for the leader election Lease.
			s.Options.PartitionNamespace = s.LeaderElectionNamespace
		}
		return options.Start(topologycontroller.Name, s.Manager, topologycontroller.CacheOptions(), func(mgr ctrl.Manager) error {
			return topologycontroller.SetupWithManager(mgr, s.Options)
		})
	})
}

// identity is the default name of this replica: the pod's name (else the host's) and a
// random suffix, new at each start: a container restarted in the same pod is another
// replica, and the Leases of the one that died are handed over when they expire.
func identity() string {
	name := os.Getenv("POD_NAME")
	if name == "" {
		name, _ = os.Hostname()
	}
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	return name + "-" + hex.EncodeToString(suffix)
}
