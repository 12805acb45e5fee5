package options

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Validator is a binary's settings: the shared Manager settings and its controller's own.
type Validator interface {
	Validate() error
}

// Settings are the settings of a binary whose controller has options of its own: the
// shared Manager settings and the controller's Options, both flat in flags, environment
// and config file.
type Settings[O Validator] struct {
	Manager `mapstructure:",squash"`
	Options O `mapstructure:",squash"`
}

// Validate checks both parts.
func (s Settings[O]) Validate() error {
	return errors.Join(s.Manager.Validate(), s.Options.Validate())
}

// Main loads the settings of binary name from fs, the environment and its config file into
// s, validates them, and calls run. It exits with status 2 on bad settings, 1 when run
// fails, and 0 after --help.
func Main(name string, fs *pflag.FlagSet, s Validator, run func() error) {
	if err := Load(name, fs, os.Args[1:], s); err != nil {
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
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// Start builds the manager of binary name, registers its controller with setup and runs
// it until a signal stops it.
func Start(name string, m Manager, byObject map[client.Object]cache.ByObject, setup func(ctrl.Manager) error) error {
	mgr, err := NewManager(name, m, byObject)
	if err != nil {
		return err
	}
	if err := setup(mgr); err != nil {
		return fmt.Errorf("set up %s: %w", name, err)
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}
