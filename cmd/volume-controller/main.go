// Command volume-controller runs the volume controller of the Valkey operator.
package main

import (
	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"

	"valkey.io/operator/cmd/internal/options"
	"valkey.io/operator/volumecontroller"
)

type settings struct {
	options.Manager `mapstructure:",squash"`
}

func main() {
	fs := pflag.NewFlagSet(volumecontroller.Name, pflag.ContinueOnError)
	options.Flags(fs)
	var s settings
	options.Main(volumecontroller.Name, fs, &s, func() error {
		return options.Start(volumecontroller.Name, s.Manager, volumecontroller.CacheOptions(), func(mgr ctrl.Manager) error {
			return volumecontroller.SetupWithManager(mgr, volumecontroller.Options{})
		})
	})
}
