package workloadcontroller

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// TestPodTemplateTLS: with spec.tls the certificate Secret is mounted whole (no subPath,
// so a renewal reaches the running pod), and valkey-start (which answers the probes) and the
// valkey-cli probes of a kept valkey-start speak TLS trusting its ca.crt; without spec.tls
// nothing of it is there.
func TestPodTemplateTLS(t *testing.T) {
	for _, tc := range []struct {
		name, secret string
		tls          *valkeyv1.TLSSpec
	}{
		{"user Secret", "my-cert", &valkeyv1.TLSSpec{SecretName: "my-cert"}},
		{"generated", "c-tls", &valkeyv1.TLSSpec{Generate: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := withName(baseNode())
			n.Spec.TLS = tc.tls
			c, spec := templateContainer(n)
			var vol *corev1.Volume
			for i := range spec.Volumes {
				if spec.Volumes[i].Secret != nil && spec.Volumes[i].Secret.SecretName == tc.secret {
					vol = &spec.Volumes[i]
				}
			}
			if vol == nil {
				t.Fatalf("no volume of Secret %s in %+v", tc.secret, spec.Volumes)
			}
			mounted := false
			for _, m := range c.VolumeMounts {
				if m.Name == vol.Name {
					mounted = m.MountPath == TLSDir && m.SubPath == "" && m.ReadOnly
				}
			}
			if !mounted {
				t.Errorf("Secret %s not mounted read-only, whole, at %s: %+v", tc.secret, TLSDir, c.VolumeMounts)
			}
			if cmd := strings.Join(c.Command, " "); !strings.Contains(cmd, " --tls-ca-file /etc/valkey-tls/ca.crt -- valkey-server ") {
				t.Errorf("valkey-start without --tls-ca-file: %s", cmd)
			}
			exec := podTemplate(n, Options{ExecProbes: true}).Spec.Containers[0]
			for name, p := range map[string]*corev1.Probe{"startup": exec.StartupProbe, "readiness": exec.ReadinessProbe, "liveness": exec.LivenessProbe} {
				if cmd := strings.Join(p.Exec.Command, " "); !strings.HasPrefix(cmd, "valkey-cli --tls --cacert /etc/valkey-tls/ca.crt ") {
					t.Errorf("%s probe of a kept valkey-start without TLS: %s", name, cmd)
				}
			}
		})
	}
	n := withName(baseNode())
	c, spec := templateContainer(n)
	for _, v := range spec.Volumes {
		if v.Name == tlsVolume {
			t.Errorf("a TLS volume without spec.tls")
		}
	}
	if strings.Contains(strings.Join(c.Command, " "), "tls") {
		t.Errorf("TLS flags without spec.tls: %q", c.Command)
	}
}

// TestRenderConfigTLS: the node's config serves TLS on the client port with the mounted
// files, plaintext only on the port asked for.
func TestRenderConfigTLS(t *testing.T) {
	spec := &valkeyv1.ValkeyNodeSpec{ServerSpec: valkeyv1.ServerSpec{TLS: &valkeyv1.TLSSpec{Generate: true, PlaintextPort: ptr.To[int32](6380)}}}
	conf, err := renderConfig(&valkeyv1.ValkeyNode{Spec: *spec}, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{`port "6380"`, `tls-port "6379"`, `tls-cert-file "/etc/valkey-tls/tls.crt"`, `tls-ca-cert-file "/etc/valkey-tls/ca.crt"`, `tls-cluster "yes"`, `tls-replication "yes"`} {
		if !strings.Contains(conf, "\n"+line+"\n") {
			t.Errorf("config lacks %s:\n%s", line, conf)
		}
	}
}

func templateContainer(n *valkeyv1.ValkeyNode) (corev1.Container, corev1.PodSpec) {
	spec := podTemplate(n, Options{}).Spec
	return spec.Containers[0], spec
}
