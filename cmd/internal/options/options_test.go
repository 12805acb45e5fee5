package options

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/pflag"
)

const kubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:6443"}
users:
- name: u
  user: {token: t}
contexts:
- name: c
  context: {cluster: c, user: u}
current-context: c
`

// load parses args as a binary would and returns the shared settings.
func load(t *testing.T, args ...string) Manager {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	Flags(fs)
	var m Manager
	if err := Load("test", fs, args, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// A kubeconfig gets the controller's client rate, not client-go's 5 requests per second.
func TestKubeconfigGetsTheClientRate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args  []string
		qps   float32
		burst int
	}{
		{nil, DefaultKubeAPIQPS, DefaultKubeAPIBurst},
		{[]string{"--kube-api-qps=30", "--kube-api-burst=60"}, 30, 60},
		{[]string{"--kube-api-qps=-1"}, -1, DefaultKubeAPIBurst},
	} {
		m := load(t, append([]string{"--kubeconfig=" + path}, tc.args...)...)
		if err := m.Validate(); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		cfg, err := m.restConfig()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.QPS != tc.qps || cfg.Burst != tc.burst {
			t.Errorf("%v: QPS %v burst %d, want %v and %d", tc.args, cfg.QPS, cfg.Burst, tc.qps, tc.burst)
		}
	}
}

func TestClientRateValidation(t *testing.T) {
	for _, args := range [][]string{{"--kube-api-qps=0"}, {"--kube-api-qps=-2"}, {"--kube-api-burst=0"}} {
		if err := load(t, args...).Validate(); err == nil {
			t.Errorf("%v: accepted", args)
		}
	}
	if err := load(t, "--kube-api-qps=-1", "--kube-api-burst=0").Validate(); err != nil {
		t.Errorf("no client-side limit needs no burst: %v", err)
	}
}
