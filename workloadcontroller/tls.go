package workloadcontroller

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/valkeyconf"
)

// TLSDir is where a node's certificate Secret (tls.crt, tls.key, ca.crt) is mounted. The
// whole Secret is mounted (no subPath), so the kubelet brings a renewed certificate into
// the running pod, and the topology controller has the server load it without a restart.
const TLSDir = "/etc/valkey-tls"

const tlsVolume = "tls"

// tlsParams are the TLS settings of the node's valkey.conf (nil without spec.tls).
func tlsParams(spec *valkeyv1.ValkeyNodeSpec) *valkeyconf.TLS {
	if spec.TLS == nil {
		return nil
	}
	return &valkeyconf.TLS{Dir: TLSDir, PlaintextPort: ptr.Deref(spec.TLS.PlaintextPort, 0)}
}

// withTLS mounts the node's certificate Secret (by name: the controller never reads it)
// and makes valkey-start and the probes speak TLS, trusting the Secret's ca.crt.
func withTLS(node *valkeyv1.ValkeyNode, spec *corev1.PodSpec) {
	secret := node.TLSSecret()
	if secret == "" {
		return
	}
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: tlsVolume, VolumeSource: corev1.VolumeSource{
		Secret: &corev1.SecretVolumeSource{SecretName: secret},
	}})
	c := &spec.Containers[0]
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: tlsVolume, MountPath: TLSDir, ReadOnly: true})
	c.Command = withStartTLS(c.Command)
	for _, p := range []*corev1.Probe{c.StartupProbe, c.ReadinessProbe, c.LivenessProbe} {
		if p != nil && p.Exec != nil {
			p.Exec.Command = cliTLS(p.Exec.Command)
		}
	}
}

// cliTLS adds the TLS flags after the CLI's name (valkey-cli and redis-cli take them).
func cliTLS(cmd []string) []string {
	out := append([]string{cmd[0]}, "--tls", "--cacert", TLSDir+"/ca.crt")
	return append(out, cmd[1:]...)
}

// withStartTLS adds valkey-start's --tls-ca-file before the "--" that ends its flags.
func withStartTLS(cmd []string) []string {
	for i, a := range cmd {
		if a == "--" {
			out := append(append([]string(nil), cmd[:i]...), "--tls-ca-file", TLSDir+"/ca.crt")
			return append(out, cmd[i:]...)
		}
	}
	return cmd
}
