// Command topology-controller runs the topology controller of the Valkey operator.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"

	"valkey.io/operator/cmd/internal/options"
	"valkey.io/operator/topologycontroller"
)

type settings struct {
	options.Manager `mapstructure:",squash"`
}

func main() {
	fs := pflag.NewFlagSet(topologycontroller.Name, pflag.ContinueOnError)
	options.Flags(fs)
	var s settings
	if err := options.Load(topologycontroller.Name, fs, os.Args[1:], &s); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if err := s.Validate(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if err := run(s); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(s settings) error {
	mgr, err := options.NewManager(topologycontroller.Name, s.Manager, topologycontroller.CacheOptions())
	if err != nil {
		return err
	}
	if err := topologycontroller.SetupWithManager(mgr, topologycontroller.Options{}); err != nil {
		return fmt.Errorf("set up %s: %w", topologycontroller.Name, err)
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}
