// Command workload-controller runs the workload controller of the Valkey operator.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"

	"valkey.io/operator/cmd/internal/options"
	"valkey.io/operator/workloadcontroller"
)

type settings struct {
	options.Manager            `mapstructure:",squash"`
	workloadcontroller.Options `mapstructure:",squash"`
}

func (s settings) Validate() error {
	return errors.Join(s.Manager.Validate(), s.Options.Validate())
}

func main() {
	fs := pflag.NewFlagSet(workloadcontroller.Name, pflag.ContinueOnError)
	options.Flags(fs)
	def := workloadcontroller.DefaultOptions()
	fs.Int64("termination-grace-period-seconds", def.TerminationGracePeriodSeconds,
		"grace period of the Valkey pods: time to save the RDB snapshot on SIGTERM")
	fs.Int64("run-as-user", def.RunAsUser, "user, group and fsGroup ID of the Valkey pods")
	var s settings
	if err := options.Load(workloadcontroller.Name, fs, os.Args[1:], &s); err != nil {
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
	mgr, err := options.NewManager(workloadcontroller.Name, s.Manager, workloadcontroller.CacheOptions())
	if err != nil {
		return err
	}
	if err := workloadcontroller.SetupWithManager(mgr, s.Options); err != nil {
		return fmt.Errorf("set up %s: %w", workloadcontroller.Name, err)
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}
