// Command volume-controller runs the volume controller of the Valkey operator.
package main

import (
	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"

	"valkey.io/operator/cmd/internal/options"
	"valkey.io/operator/volumecontroller"
)

func main() {
	fs := pflag.NewFlagSet(volumecontroller.Name, pflag.ContinueOnError)
	options.Flags(fs)
	fs.Bool("ignore-storage-classes", false, "neither read nor watch StorageClasses (an install without cluster-wide rights): claims are created without checking their class")
	fs.Int("max-concurrent-reconciles", volumecontroller.DefaultOptions().MaxConcurrentReconciles, "ValkeyNodes reconciled at once")
	fs.Duration("usage-interval", volumecontroller.DefaultOptions().UsageInterval, "how often each node's /data usage is read from valkey-start's metrics on its pod")
	fs.Int("valkey-metrics-port", volumecontroller.DefaultOptions().ValkeyMetricsPort, "port of valkey-start's metrics on the nodes' pods")
	var s options.Settings[volumecontroller.Options]
	options.Main(volumecontroller.Name, fs, &s, func() error {
		return options.Start(volumecontroller.Name, s.Manager, volumecontroller.CacheOptions(), func(mgr ctrl.Manager) error {
			// VolumeSnapshots are cached in the namespace the manager watches.
			s.Options.WatchNamespace = s.WatchNamespace
			return volumecontroller.SetupWithManager(mgr, s.Options)
		})
	})
}
