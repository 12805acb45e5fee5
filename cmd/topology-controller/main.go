// Command topology-controller runs the topology controller of the Valkey operator.
package main

import (
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
	fs.Int("max-concurrent-reconciles", d.MaxConcurrentReconciles, "clusters reconciled at once")
	fs.String("operator-namespace", os.Getenv("POD_NAMESPACE"), "namespace every cluster's NetworkPolicy admits to both ports (this controller's: $POD_NAMESPACE by default)")
	var s options.Settings[topologycontroller.Options]
	options.Main(topologycontroller.Name, fs, &s, func() error {
		return options.Start(topologycontroller.Name, s.Manager, topologycontroller.CacheOptions(), func(mgr ctrl.Manager) error {
			return topologycontroller.SetupWithManager(mgr, s.Options)
		})
	})
}
