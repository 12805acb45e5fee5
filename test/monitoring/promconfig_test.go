package monitoring

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The configuration made of deploy/monitoring has one job per PodMonitor, selecting as the
// monitor does, and the rules with their `for` shortened; promtool, when PROMTOOL names it,
// checks both.
func TestConfigOfDeployMonitoring(t *testing.T) {
	dir := t.TempDir()
	config, rules, err := Config(filepath.Join("..", "..", "deploy", "monitoring"),
		Options{Kubeconfig: "/k", Interval: "5s", For: "10s", RulesFile: filepath.Join(dir, "rules.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"job_name: podMonitor/valkey-system/valkey-operator/0", "job_name: podMonitor/valkey-system/valkey-servers/0",
		"__meta_kubernetes_pod_label_app_kubernetes_io_managed_by", "target_label: cluster", "honor_labels: true", "kubeconfig_file: /k"} {
		if !strings.Contains(string(config), want) {
			t.Errorf("config has no %q:\n%s", want, config)
		}
	}
	if strings.Count(string(rules), "alert: ") != strings.Count(string(rules), "for: 10s") {
		t.Errorf("every alert's for should be 10s:\n%s", rules)
	}
	promtool := os.Getenv("PROMTOOL")
	if promtool == "" {
		t.Skip("PROMTOOL is not set: the files are not checked by promtool")
	}
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, config, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), rules, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "check", "config", "--syntax-only", cfg).CombinedOutput(); err != nil {
		t.Fatalf("promtool check config: %v\n%s", err, out)
	}
}
