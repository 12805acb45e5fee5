// Package envtest starts a real kube-apiserver and etcd with the operator's CRDs installed,
// for the controllers' test suites. It uses KUBEBUILDER_ASSETS when set; otherwise the
// binaries `make envtest-bins` builds from the Go module proxy into the cache folder
// (see BinDir).
package envtest

import (
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	ctrlenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// K8sVersion is the version of kube-apiserver the test tree builds (test/k8sbuild).
const K8sVersion = "v1.37.2"

// RepoRoot is the repository's top folder.
func RepoRoot() string {
	_, file, _, _ := goruntime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// BinDir is where kube-apiserver and etcd are found: KUBEBUILDER_ASSETS when set, else
// $VALKEY_OPERATOR_CACHE (default ~/.cache/valkey-operator) /k8s-<version>.
func BinDir() string {
	if d := os.Getenv("KUBEBUILDER_ASSETS"); d != "" {
		return d
	}
	return filepath.Join(CacheDir(), "k8s-"+K8sVersion)
}

// CacheDir is the machine-wide cache of built binaries.
func CacheDir() string {
	if d := os.Getenv("VALKEY_OPERATOR_CACHE"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = os.TempDir()
	}
	return filepath.Join(home, ".cache", "valkey-operator")
}

// Environment is a running API server with the CRDs installed.
type Environment struct {
	*ctrlenvtest.Environment
	Config *rest.Config
}

// Start starts the API server and etcd and installs the CRDs from deploy/crd. Call Stop.
func Start() (*Environment, error) { return StartWith(nil) }

// StartWith is Start with more kube-apiserver flags (name without dashes, value), such as
// an audit log.
func StartWith(apiServerFlags map[string]string) (*Environment, error) {
	if err := valkeyv1.AddToScheme(scheme.Scheme); err != nil {
		return nil, err
	}
	dir := BinDir()
	if _, err := os.Stat(filepath.Join(dir, "kube-apiserver")); err != nil {
		return nil, fmt.Errorf("no kube-apiserver in %s: run `make envtest-bins` (builds it from the Go module proxy) or set KUBEBUILDER_ASSETS", dir)
	}
	env := &ctrlenvtest.Environment{
		BinaryAssetsDirectory:    dir,
		CRDDirectoryPaths:        []string{filepath.Join(RepoRoot(), "deploy", "crd")},
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: startTimeout(),
	}
	args := env.ControlPlane.GetAPIServer().Configure()
	for name, value := range apiServerFlags {
		args.Set(name, value)
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("start envtest: %w", err)
	}
	return &Environment{Environment: env, Config: cfg}, nil
}

// Stop stops the API server and etcd.
func (e *Environment) Stop() error { return e.Environment.Stop() }

// Scheme holds the Kubernetes built-in types and the operator's API.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := scheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := valkeyv1.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}

// Client is a client of the test API server with Scheme, able to watch.
func (e *Environment) Client() (client.WithWatch, error) {
	s, err := Scheme()
	if err != nil {
		return nil, err
	}
	return client.NewWithWatch(e.Config, client.Options{Scheme: s})
}

// NewManager is a manager like a controller binary's, with that controller's cache filters
// (byObject) and no managedFields in its caches, but no metrics endpoint, health probes or leader election. Several may be
// made in one process (a suite that stops and restarts its controller).
func (e *Environment) NewManager(byObject map[client.Object]cache.ByObject) (ctrl.Manager, error) {
	s, err := Scheme()
	if err != nil {
		return nil, err
	}
	return ctrl.NewManager(e.Config, ctrl.Options{
		Scheme:                 s,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{ByObject: byObject, DefaultTransform: cache.TransformStripManagedFields()},
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
}

// startTimeout is how long etcd and the API server each have to start: 2 minutes, not
// envtest's 20 s, since make test starts several at once on two cores (the topology suites'
// processes beside the packages'). With KUBEBUILDER_CONTROLPLANE_START_TIMEOUT set it is 0:
// envtest then reads the variable itself (and refuses a value that is no duration).
func startTimeout() time.Duration {
	if os.Getenv("KUBEBUILDER_CONTROLPLANE_START_TIMEOUT") != "" {
		return 0
	}
	return 2 * time.Minute
}
