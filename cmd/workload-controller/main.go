// Command workload-controller runs the workload controller of the Valkey operator.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"

	"valkey.io/operator/cmd/internal/options"
	"valkey.io/operator/workloadcontroller"
)

func main() {
	fs := pflag.NewFlagSet(workloadcontroller.Name, pflag.ContinueOnError)
	options.Flags(fs)
	def := workloadcontroller.DefaultOptions()
	fs.Int64("termination-grace-period-seconds", def.TerminationGracePeriodSeconds,
		"grace period of the Valkey pods: time to save the RDB snapshot on SIGTERM")
	fs.Int64("run-as-user", def.RunAsUser, "user, group and fsGroup ID of the Valkey pods")
	fs.String("start-image", "", "image holding "+workloadcontroller.StartImagePath+
		" that the Valkey pods copy (this controller's own image when empty)")
	fs.Bool("ignore-nodes", false, "neither read nor watch Kubernetes nodes (an install without cluster-wide rights): "+
		"a pod on a lost node is reported not ready without saying why")
	fs.Int("max-concurrent-reconciles", def.MaxConcurrentReconciles, "ValkeyNodes reconciled at once")
	fs.String("cluster-domain", def.ClusterDomain, "the Kubernetes cluster's DNS domain, in the pods' DNS names "+
		"(valkey-<node>-0.valkey-<cluster>-nodes.<namespace>.svc.<domain>)")
	fs.String("operator-namespace", os.Getenv("POD_NAMESPACE"), "namespace whose volume controller the NetworkPolicy of a node outside any cluster admits to valkey-start's metrics port (this controller's: $POD_NAMESPACE by default)")
	var s options.Settings[workloadcontroller.Options]
	options.Main(workloadcontroller.Name, fs, &s, func() error {
		return options.Start(workloadcontroller.Name, s.Manager, workloadcontroller.CacheOptions(), func(mgr ctrl.Manager) error {
			if s.Options.StartImage == "" {
				img, err := ownImage(context.Background(), mgr.GetAPIReader())
				if err != nil {
					return fmt.Errorf("start image: %w", err)
				}
				s.Options.StartImage = img
			}
			return workloadcontroller.SetupWithManager(mgr, s.Options)
		})
	})
}
