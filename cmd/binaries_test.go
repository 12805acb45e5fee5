// Package cmd_test builds the three controller binaries and runs them the way a user would.
package cmd_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	ctrlenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	"valkey.io/operator/test/envtest"
)

var binaries = []string{"volume-controller", "workload-controller", "topology-controller"}

// ownArgs are the settings a binary needs outside a pod: the workload controller learns the
// image holding valkey-start from its own pod, or from --start-image.
var ownArgs = map[string][]string{"workload-controller": {"--start-image=valkey.local/workload-controller:dev"}}

// buildAll builds the binaries into dir in one go command (one compile of what they share).
func buildAll(t *testing.T, dir string) {
	t.Helper()
	args := []string{"build", "-o", dir + "/"}
	for _, name := range binaries {
		args = append(args, "./"+name)
	}
	cmd := exec.Command("go", args...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
}

// apiServer starts an API server for the test and returns a temporary folder holding an
// admin kubeconfig for it, and that kubeconfig's path.
func apiServer(t *testing.T) (dir, kubeconfigPath string) {
	t.Helper()
	env, err := envtest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	user, err := env.AddUser(ctrlenvtest.User{Name: "operator", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	kubeconfigPath = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfigPath, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, kubeconfigPath
}

func TestBinaries(t *testing.T) {
	dir, kubeconfigPath := apiServer(t)

	buildAll(t, dir)
	for _, name := range binaries {
		t.Run(name, func(t *testing.T) {
			bin := filepath.Join(dir, name)

			help, _ := exec.Command(bin, "--help").CombinedOutput()
			for _, setting := range []string{"--kubeconfig", "--metrics-bind-address", "--health-probe-bind-address", "--leader-elect", "--watch-namespace", "--log-level", "--config", "VALKEY_OPERATOR_"} {
				if !strings.Contains(string(help), setting) {
					t.Errorf("--help does not list %s:\n%s", setting, help)
				}
			}

			bad, err := exec.Command(bin, "--log-level=loud").CombinedOutput()
			if err == nil || !strings.Contains(string(bad), "log-level") {
				t.Errorf("an invalid setting should fail with a message naming it, got %v: %s", err, bad)
			}

			health := freeAddr(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, append([]string{"--kubeconfig=" + kubeconfigPath, "--metrics-bind-address=0",
				"--leader-election-namespace=default"}, ownArgs[name]...)...)
			// Settings from the environment work as well as flags.
			cmd.Env = append(os.Environ(), "VALKEY_OPERATOR_HEALTH_PROBE_BIND_ADDRESS="+health)
			logs := &strings.Builder{}
			cmd.Stdout, cmd.Stderr = logs, logs
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
			for _, path := range []string{"/healthz", "/readyz"} {
				if err := waitOK("http://"+health+path, 60*time.Second); err != nil {
					t.Fatalf("%s %s: %v\nlogs:\n%s", name, path, err, logs)
				}
			}
		})
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String()
}

func waitOK(url string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		resp, err := http.Get(url)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		last = err
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("not OK within %s: %w", timeout, last)
}

// TestWorkloadControllerNeedsStartImage runs the workload controller outside a pod without
// --start-image: it must stop at once and say what to set.
func TestWorkloadControllerNeedsStartImage(t *testing.T) {
	dir, kubeconfigPath := apiServer(t)
	bin := filepath.Join(dir, "workload-controller")
	if out, err := exec.Command("go", "build", "-o", bin, "./workload-controller").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "--kubeconfig="+kubeconfigPath, "--metrics-bind-address=0", "--health-probe-bind-address=0",
		"--leader-elect=false")
	cmd.Env = append(os.Environ(), "POD_NAME=", "POD_NAMESPACE=")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--start-image") {
		t.Fatalf("want a failure naming --start-image, got %v:\n%s", err, out)
	}
}
