// Package options loads a controller binary's settings with viper: command-line flags,
// environment variables VALKEY_OPERATOR_<FLAG> (dashes become underscores) and an optional
// config file (--config, YAML), in that order of precedence. Only cmd/ imports viper;
// controller packages receive typed settings.
package options

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// EnvPrefix prefixes every environment variable setting.
const EnvPrefix = "VALKEY_OPERATOR"

// Manager holds the settings every controller binary shares.
type Manager struct {
	Kubeconfig              string `mapstructure:"kubeconfig"`
	MetricsBindAddress      string `mapstructure:"metrics-bind-address"`
	HealthProbeBindAddress  string `mapstructure:"health-probe-bind-address"`
	LeaderElect             bool   `mapstructure:"leader-elect"`
	LeaderElectionNamespace string `mapstructure:"leader-election-namespace"`
	WatchNamespace          string `mapstructure:"watch-namespace"`
	LogLevel                string `mapstructure:"log-level"`
	LogDevelopment          bool   `mapstructure:"log-development"`
	// KubeAPIQPS and KubeAPIBurst are the client's rate to the API server, whatever the
	// configuration source (in-cluster or kubeconfig); a QPS of -1 sets no client-side
	// limit and leaves it to the API server's priority and fairness.
	KubeAPIQPS   float32 `mapstructure:"kube-api-qps"`
	KubeAPIBurst int     `mapstructure:"kube-api-burst"`
	// PprofBindAddress is the address of the net/http/pprof endpoints; empty turns them off.
	PprofBindAddress string `mapstructure:"pprof-bind-address"`
	// MemoryLimit is the container's memory limit (a quantity; the deploy manifests pass
	// limits.memory); MemoryLimitShare of it becomes the Go runtime's soft memory limit
	// unless $GOMEMLIMIT is set. Empty: no soft limit.
	MemoryLimit string `mapstructure:"memory-limit"`
}

// Default client rate to the API server: above what the fan-out of a cluster of a thousand
// nodes asks for at the API server's pace (about 150 writes a second per controller on a
// two-core server; at 200 per second the fan-out of 300 nodes took 1.7 times as long), while
// a controller stuck in a loop stays bounded. The API server's priority and fairness does
// the rest.
const (
	DefaultKubeAPIQPS   = 1000
	DefaultKubeAPIBurst = 2000
)

// Flags registers the shared settings on fs.
func Flags(fs *pflag.FlagSet) {
	fs.String("config", "", "optional YAML file with any of these settings (flag names as keys)")
	fs.String("kubeconfig", "", "kubeconfig file; in-cluster configuration or $KUBECONFIG when empty")
	fs.String("metrics-bind-address", ":8080", "address of the Prometheus metrics endpoint; \"0\" disables it")
	fs.String("health-probe-bind-address", ":8081", "address of the /healthz and /readyz endpoints")
	fs.Bool("leader-elect", true, "elect a leader so that only one replica reconciles at a time")
	fs.String("leader-election-namespace", "", "namespace of the leader election Lease (the pod's namespace when empty)")
	fs.String("watch-namespace", "", "only watch this namespace (all namespaces when empty)")
	fs.String("log-level", "info", "log level: debug, info or error")
	fs.Bool("log-development", false, "human-readable development logs instead of JSON")
	fs.Float32("kube-api-qps", DefaultKubeAPIQPS, "requests per second to the API server (in-cluster or --kubeconfig alike); -1 for no client-side limit")
	fs.Int("kube-api-burst", DefaultKubeAPIBurst, "requests to the API server allowed at once above --kube-api-qps")
	fs.String("pprof-bind-address", "", "address of the /debug/pprof endpoints (heap and CPU profiles); off when empty")
	fs.String("memory-limit", "", "the container's memory limit (e.g. 256Mi or bytes): 90% of it becomes the Go soft memory limit unless $GOMEMLIMIT is set; none when empty")
}

// Load parses args into fs, binds the flags, environment and config file to viper, and
// unmarshals the result into out (a struct with mapstructure tags). It returns
// pflag.ErrHelp after printing usage for --help.
func Load(name string, fs *pflag.FlagSet, args []string, out any) error {
	fs.Usage = func() {
		fmt.Fprintf(os.Stderr, "Usage of %s:\n\nEvery flag can also be set as the environment variable %s_<FLAG> (upper case, dashes as underscores) or as a key of the --config file.\n\n%s", name, EnvPrefix, fs.FlagUsages())
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	v := viper.New()
	if err := v.BindPFlags(fs); err != nil {
		return err
	}
	v.SetEnvPrefix(EnvPrefix)
	v.SetEnvKeyReplacer(strings.NewReplacer("-", "_"))
	v.AutomaticEnv()
	if file := v.GetString("config"); file != "" {
		v.SetConfigFile(file)
		if err := v.ReadInConfig(); err != nil {
			return fmt.Errorf("read config file %s: %w", file, err)
		}
	}
	if err := v.Unmarshal(out); err != nil {
		return fmt.Errorf("settings: %w", err)
	}
	return nil
}

// Validate checks the shared settings.
func (m Manager) Validate() error {
	switch m.LogLevel {
	case "debug", "info", "error":
	default:
		return fmt.Errorf("log-level must be debug, info or error, not %q", m.LogLevel)
	}
	if m.HealthProbeBindAddress == "" {
		return errors.New("health-probe-bind-address must not be empty")
	}
	if m.KubeAPIQPS <= 0 && m.KubeAPIQPS != -1 {
		return fmt.Errorf("kube-api-qps must be positive, or -1 for no client-side limit, not %v", m.KubeAPIQPS)
	}
	if m.KubeAPIQPS > 0 && m.KubeAPIBurst < 1 {
		return fmt.Errorf("kube-api-burst must be at least 1, not %d", m.KubeAPIBurst)
	}
	if _, err := memoryLimit(m.MemoryLimit); err != nil {
		return err
	}
	return nil
}

// Scheme is the scheme every binary uses: client-go's types plus valkey.io/v1alpha1.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = valkeyv1.AddToScheme(s)
	return s
}

// NewManager builds a controller-runtime manager named name (its leader election Lease is
// <name>.valkey.io) with health and readiness checks and the given cache filters.
func NewManager(name string, m Manager, byObject map[client.Object]cache.ByObject) (ctrl.Manager, error) {
	level := zapcore.InfoLevel
	switch m.LogLevel {
	case "debug":
		level = zapcore.DebugLevel
	case "error":
		level = zapcore.ErrorLevel
	}
	ctrl.SetLogger(zap.New(zap.UseDevMode(m.LogDevelopment), zap.Level(level)))
	m.applyMemorySettings()

	cfg, err := m.restConfig()
	if err != nil {
		return nil, err
	}
	opts := ctrl.Options{
		Scheme:                        Scheme(),
		Metrics:                       metricsserver.Options{BindAddress: m.MetricsBindAddress},
		HealthProbeBindAddress:        m.HealthProbeBindAddress,
		PprofBindAddress:              m.PprofBindAddress,
		LeaderElection:                m.LeaderElect,
		LeaderElectionID:              name + ".valkey.io",
		LeaderElectionNamespace:       m.LeaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
		Cache:                         CacheOptions(byObject),
	}
	if m.WatchNamespace != "" {
		opts.Cache.DefaultNamespaces = map[string]cache.Config{m.WatchNamespace: {}}
	}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("create manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("readyz", func(req *http.Request) error {
		if !mgr.GetCache().WaitForCacheSync(req.Context()) {
			return errors.New("caches not synced")
		}
		return nil
	}); err != nil {
		return nil, err
	}
	return mgr, nil
}

// CacheOptions are the cache settings of every controller: the given per-type filters, and
// no managedFields in any cached object (no controller reads them: server-side apply
// computes ownership on the API server). A per-type Transform replaces this default.
func CacheOptions(byObject map[client.Object]cache.ByObject) cache.Options {
	return cache.Options{ByObject: byObject, DefaultTransform: cache.TransformStripManagedFields()}
}

// restConfig loads the client configuration (in-cluster, $KUBECONFIG or --kubeconfig) and
// sets the client's rate on it, whichever source it came from.
func (m Manager) restConfig() (*rest.Config, error) {
	cfg, err := loadRestConfig(m.Kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = m.KubeAPIQPS, m.KubeAPIBurst
	return cfg, nil
}

func loadRestConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		return ctrl.GetConfig()
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %s: %w", kubeconfig, err)
	}
	return cfg, nil
}
