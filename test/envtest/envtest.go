// Package envtest starts a real kube-apiserver and etcd with the operator's CRDs installed,
// for the controllers' test suites. It uses KUBEBUILDER_ASSETS when set; otherwise the
// binaries `make envtest-bins` builds from the Go module proxy into the cache folder
// (see BinDir).
package envtest

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrlenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// K8sVersion is the version of kube-apiserver the test tree builds (test/k8sbuild).
const K8sVersion = "v1.37.2"

// RepoRoot is the repository's top folder.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
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
func Start() (*Environment, error) {
	if err := valkeyv1.AddToScheme(scheme.Scheme); err != nil {
		return nil, err
	}
	dir := BinDir()
	if _, err := os.Stat(filepath.Join(dir, "kube-apiserver")); err != nil {
		return nil, fmt.Errorf("no kube-apiserver in %s: run `make envtest-bins` (builds it from the Go module proxy) or set KUBEBUILDER_ASSETS", dir)
	}
	env := &ctrlenvtest.Environment{
		BinaryAssetsDirectory: dir,
		CRDDirectoryPaths:     []string{filepath.Join(RepoRoot(), "deploy", "crd")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("start envtest: %w", err)
	}
	return &Environment{Environment: env, Config: cfg}, nil
}

// Stop stops the API server and etcd.
func (e *Environment) Stop() error { return e.Environment.Stop() }
