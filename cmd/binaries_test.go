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

func TestBinaries(t *testing.T) {
	env, err := envtest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.Stop() }()
	user, err := env.AddUser(ctrlenvtest.User{Name: "operator", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	kubeconfigPath := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfigPath, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}

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
			cmd := exec.CommandContext(ctx, bin, "--kubeconfig="+kubeconfigPath, "--metrics-bind-address=0",
				"--leader-election-namespace=default")
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
