// Package monitoring turns the Prometheus Operator objects of deploy/monitoring into what a
// plain Prometheus server reads, for the e2e that scrapes the local cluster with a real
// Prometheus (test/e2e/prometheus_test.go): one scrape job per PodMonitor (Kubernetes pod
// discovery, the monitor's selector, port and relabelings, as the Prometheus Operator would
// generate it) and the PrometheusRule's groups as a rules file.
package monitoring

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// podMonitor is the part of a monitoring.coreos.com/v1 PodMonitor the jobs are made of.
type podMonitor struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Spec struct {
		NamespaceSelector struct {
			Any        bool     `json:"any"`
			MatchNames []string `json:"matchNames"`
		} `json:"namespaceSelector"`
		Selector struct {
			MatchLabels map[string]string `json:"matchLabels"`
		} `json:"selector"`
		Endpoints []struct {
			Port        string           `json:"port"`
			Interval    string           `json:"interval"`
			HonorLabels bool             `json:"honorLabels"`
			Relabelings []map[string]any `json:"relabelings"`
		} `json:"podMetricsEndpoints"`
	} `json:"spec"`
}

// Options are what the generated configuration needs besides the monitors.
type Options struct {
	// Kubeconfig is the file Prometheus discovers the pods with.
	Kubeconfig string
	// Interval replaces every scrape and evaluation interval (the e2e's "5s").
	Interval string
	// For replaces every alert's `for` (the e2e waits seconds, not minutes); "" keeps them.
	For string
	// RulesFile is the path the configuration names for the rules.
	RulesFile string
}

// Config reads the PodMonitors and the PrometheusRule of dir and returns the Prometheus
// configuration and the rules file.
func Config(dir string, o Options) (config, rules []byte, err error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, nil, err
	}
	sort.Strings(files)
	var jobs []any
	var groups []any
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, nil, err
		}
		var kind struct {
			Kind string         `json:"kind"`
			Spec map[string]any `json:"spec"`
		}
		if err := yaml.Unmarshal(raw, &kind); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", f, err)
		}
		switch kind.Kind {
		case "PodMonitor":
			var pm podMonitor
			if err := yaml.Unmarshal(raw, &pm); err != nil {
				return nil, nil, fmt.Errorf("%s: %w", f, err)
			}
			jobs = append(jobs, scrapeJobs(pm, o)...)
		case "PrometheusRule":
			gs, _ := kind.Spec["groups"].([]any)
			groups = append(groups, shortened(gs, o.For)...)
		}
	}
	if config, err = yaml.Marshal(map[string]any{
		"global":         map[string]any{"scrape_interval": o.Interval, "evaluation_interval": o.Interval},
		"rule_files":     []string{o.RulesFile},
		"scrape_configs": jobs,
	}); err != nil {
		return nil, nil, err
	}
	rules, err = yaml.Marshal(map[string]any{"groups": groups})
	return config, rules, err
}

// scrapeJobs are a PodMonitor's jobs, one per endpoint, named as the Prometheus Operator
// names them (podMonitor/<namespace>/<name>/<index>) and labelled job=<namespace>/<name>.
func scrapeJobs(pm podMonitor, o Options) []any {
	var out []any
	for i, ep := range pm.Spec.Endpoints {
		sd := map[string]any{"role": "pod", "kubeconfig_file": o.Kubeconfig}
		if !pm.Spec.NamespaceSelector.Any {
			names := pm.Spec.NamespaceSelector.MatchNames
			if len(names) == 0 {
				names = []string{pm.Metadata.Namespace}
			}
			sd["namespaces"] = map[string]any{"names": names}
		}
		var relabel []any
		for _, k := range sortedKeys(pm.Spec.Selector.MatchLabels) {
			relabel = append(relabel, map[string]any{"action": "keep", "source_labels": []string{"__meta_kubernetes_pod_label_" + sanitize(k)},
				"regex": pm.Spec.Selector.MatchLabels[k]})
		}
		relabel = append(relabel,
			map[string]any{"action": "keep", "source_labels": []string{"__meta_kubernetes_pod_container_port_name"}, "regex": ep.Port},
			map[string]any{"action": "keep", "source_labels": []string{"__meta_kubernetes_pod_phase"}, "regex": "Running"},
			map[string]any{"source_labels": []string{"__meta_kubernetes_namespace"}, "target_label": "namespace"},
			map[string]any{"source_labels": []string{"__meta_kubernetes_pod_name"}, "target_label": "pod"},
			map[string]any{"target_label": "job", "replacement": pm.Metadata.Namespace + "/" + pm.Metadata.Name})
		for _, r := range ep.Relabelings {
			relabel = append(relabel, snakeKeys(r))
		}
		out = append(out, map[string]any{
			"job_name":              fmt.Sprintf("podMonitor/%s/%s/%d", pm.Metadata.Namespace, pm.Metadata.Name, i),
			"honor_labels":          ep.HonorLabels,
			"scrape_interval":       o.Interval,
			"kubernetes_sd_configs": []any{sd},
			"relabel_configs":       relabel,
		})
	}
	return out
}

// shortened are the rule groups with every alert's `for` set to d ("" keeps them).
func shortened(groups []any, d string) []any {
	if d == "" {
		return groups
	}
	for _, g := range groups {
		rules, _ := g.(map[string]any)["rules"].([]any)
		for _, r := range rules {
			if rule := r.(map[string]any); rule["alert"] != nil {
				rule["for"] = d
			}
		}
	}
	return groups
}

// snakeKeys turns a relabeling's Prometheus Operator keys (sourceLabels, targetLabel) into
// Prometheus's (source_labels, target_label).
func snakeKeys(r map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range r {
		var b strings.Builder
		for _, c := range k {
			if c >= 'A' && c <= 'Z' {
				b.WriteByte('_')
				c += 'a' - 'A'
			}
			b.WriteRune(c)
		}
		out[b.String()] = v
	}
	return out
}

// sanitize is a label name as Kubernetes discovery writes it (every character not allowed
// in a label name becomes '_').
func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' {
			return r
		}
		return '_'
	}, s)
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
