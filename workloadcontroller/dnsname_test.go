package workloadcontroller

import (
	"strings"
	"testing"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// A node of a cluster gets a DNS name under the cluster's headless Service; a node outside
// any cluster, or whose name cannot be a DNS label, gets none.
func TestPodDNSName(t *testing.T) {
	for _, tc := range []struct {
		name, cluster, hostname, subdomain string
	}{
		{"c-0-0", "c", "valkey-c-0-0-0", "valkey-c-nodes"},
		{"solo", "", "", ""},
		{"my.c-0-0", "my.c", "", ""},
	} {
		n := &valkeyv1.ValkeyNode{}
		n.Name, n.Namespace, n.Spec.ClusterName, n.Spec.Image = tc.name, "ns", tc.cluster, "i"
		spec := podTemplate(n, Options{}).Spec
		if spec.Hostname != tc.hostname || spec.Subdomain != tc.subdomain {
			t.Errorf("%s: hostname %q subdomain %q, want %q %q", tc.name, spec.Hostname, spec.Subdomain, tc.hostname, tc.subdomain)
		}
	}
}

// announce: hostname renders the pod's DNS name under the cluster domain and the preferred
// endpoint type; ip or unset renders exactly what the operator rendered before (no roll).
func TestRenderConfigAnnounce(t *testing.T) {
	n := withName(baseNode())
	before, err := renderConfig(n, "")
	if err != nil {
		t.Fatal(err)
	}
	n.Spec.Announce = valkeyv1.AnnounceIP
	if ip, _ := renderConfig(n, "example.org"); ip != before {
		t.Errorf("announce: ip changed the config:\n%s\nwas:\n%s", ip, before)
	}
	if strings.Contains(before, "announce-hostname") || strings.Contains(before, "preferred-endpoint") {
		t.Errorf("the default config announces a hostname:\n%s", before)
	}
	n.Spec.Announce = valkeyv1.AnnounceHostname
	for domain, want := range map[string]string{"": "valkey-c-0-0-0.valkey-c-nodes.ns.svc.cluster.local", "example.org": "valkey-c-0-0-0.valkey-c-nodes.ns.svc.example.org"} {
		conf, err := renderConfig(n, domain)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range []string{`cluster-announce-hostname "` + want + `"`, `cluster-preferred-endpoint-type "hostname"`} {
			if !strings.Contains(conf, "\n"+line+"\n") {
				t.Errorf("domain %q: no line %s in:\n%s", domain, line, conf)
			}
		}
	}
	n.Spec.Config = map[string]string{"cluster-announce-hostname": "x"}
	if _, err := renderConfig(n, ""); asConfigError(err) == nil {
		t.Errorf("spec.config may set cluster-announce-hostname: %v", err)
	}
}

// A new StatefulSet is made with the headless Service as serviceName (its pod is named under
// it); one made without keeps none (immutable), and its node then announces no hostname,
// which would not resolve. A Deployment's pod has its name from the template.
func TestDesiredForDNSName(t *testing.T) {
	n := withName(baseNode())
	n.Spec.Announce = valkeyv1.AnnounceHostname
	announces := func(d *desired) bool { return strings.Contains(d.config, "cluster-announce-hostname") }
	for _, tc := range []struct {
		name        string
		cur         *current
		deployment  bool
		wantService string
		announce    bool
	}{
		{"new StatefulSet", &current{workloads: map[valkeyv1.WorkloadType]*workload{}}, false, "valkey-c-nodes", true},
		{"StatefulSet with serviceName", &current{workloads: map[valkeyv1.WorkloadType]*workload{
			valkeyv1.WorkloadStatefulSet: {serviceName: "valkey-c-nodes"}}}, false, "valkey-c-nodes", true},
		{"StatefulSet made before DNS names", &current{workloads: map[valkeyv1.WorkloadType]*workload{
			valkeyv1.WorkloadStatefulSet: {}}}, false, "", false},
		{"Deployment", &current{workloads: map[valkeyv1.WorkloadType]*workload{}}, true, "valkey-c-nodes", true},
	} {
		m := n.DeepCopy()
		if tc.deployment {
			m.Spec.WorkloadType, m.Spec.Persistence = valkeyv1.WorkloadDeployment, nil
		}
		d, err := desiredFor(m, tc.cur, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if d.serviceName != tc.wantService || announces(d) != tc.announce {
			t.Errorf("%s: serviceName %q announces %v, want %q %v", tc.name, d.serviceName, announces(d), tc.wantService, tc.announce)
		}
	}
}
