// Command volume-controller runs the volume controller of the Valkey operator.
package main

import (
	"errors"
	"fmt"
	"os"

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
	if err := options.Load(volumecontroller.Name, fs, os.Args[1:], &s); err != nil {
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
	mgr, err := options.NewManager(volumecontroller.Name, s.Manager, volumecontroller.CacheOptions())
	if err != nil {
		return err
	}
	if err := volumecontroller.SetupWithManager(mgr, volumecontroller.Options{}); err != nil {
		return fmt.Errorf("set up %s: %w", volumecontroller.Name, err)
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}
