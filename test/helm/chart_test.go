// Package helm checks the Helm chart (deploy/helm/valkey-operator) against the kustomize
// manifests it must never drift from, and installs it on the local cluster (install_test.go).
package helm

import (
	"strings"
	"testing"
)

// localValues are the values that make the chart deploy/local: the images the local cluster
// imports and three topology controllers.
var localValues = []string{
	"volumeController.image.repository=valkey.local/volume-controller", "volumeController.image.tag=dev",
	"workloadController.image.repository=valkey.local/workload-controller", "workloadController.image.tag=dev",
	"topologyController.image.repository=valkey.local/topology-controller", "topologyController.image.tag=dev",
	"topologyController.replicas=3",
}

// The chart with the values each case gives renders exactly the objects of a kustomize folder,
// but for Helm's own labels: same CRDs, RBAC rules, Deployments, arguments and environment.
func TestChartMatchesKustomize(t *testing.T) {
	cases := []struct {
		name, dir, namespace string
		sets                 []string
	}{
		{"default", "default", "valkey-system", []string{"namespace.create=true"}},
		{"namespaced", "namespaced", "valkey-system", []string{"namespaced=true", "crds.create=false"}},
		{"monitoring", "default-monitoring", "valkey-system", []string{"namespace.create=true",
			"metrics.podMonitor.enabled=true", "metrics.valkeyPodMonitor.enabled=true", "metrics.prometheusRule.enabled=true"}},
		{"local", "local", "valkey-system", append([]string{"namespace.create=true"}, localValues...)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := withoutHelmLabels(kustomize(t, tc.dir))
			got := withoutHelmLabels(helmTemplate(t, tc.namespace, tc.sets...))
			if d := diff(want, got); len(d) > 0 {
				t.Fatalf("helm template (%s) and kustomize build deploy/%s differ in %d object(s):\n%s",
					strings.Join(tc.sets, ","), tc.dir, len(d), strings.Join(d, "\n"))
			}
			t.Logf("deploy/%s: %d objects, equal", tc.dir, len(want))
		})
	}
}

// Every object the chart renders carries Helm's labels, so an install can be told from one
// made with kustomize.
func TestChartLabelsEveryObject(t *testing.T) {
	for _, o := range helmTemplate(t, "valkey-system", "namespace.create=true", "metrics.podMonitor.enabled=true",
		"metrics.valkeyPodMonitor.enabled=true", "metrics.prometheusRule.enabled=true") {
		labels, _ := o["metadata"].(map[string]any)["labels"].(map[string]any)
		if labels["app.kubernetes.io/managed-by"] != "Helm" {
			t.Errorf("%s has no app.kubernetes.io/managed-by: Helm label: %v", o.key(), labels)
		}
	}
}
