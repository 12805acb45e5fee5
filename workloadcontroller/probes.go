package workloadcontroller

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/valkeyconf"
)

// withProbes sets the server container's startup, readiness and liveness probes. valkey-start
// answers them on its metrics port (valkeyconf.ReadyPath, AlivePath) over a connection it
// keeps to the server: the kubelet makes an HTTP request, nothing is started in the
// container, and a server up in a fraction of a second is Ready within milliseconds of the
// kubelet asking. exec gives the earlier form, valkey-cli run in the container, kept only for
// a workload whose running valkey-start is kept (keepStartImage): that valkey-start may not
// answer the paths.
func withProbes(node *valkeyv1.ValkeyNode, c *corev1.Container, exec bool) {
	// Ready: answers PING without error; not Ready after 10 s without. Asked every second:
	// the kubelet asks it at once when the startup probe succeeds only if the pod's status
	// already shows the start, else at its next period.
	ready, alive := httpProbe(valkeyconf.ReadyPath), httpProbe(valkeyconf.AlivePath)
	readyPeriod, readyFailures := int32(1), int32(10)
	if exec { // as that release had them: a process per probe, readiness every 5 s
		ready, alive = cliPing(node, true), cliPing(node, false)
		readyPeriod, readyFailures = 5, 2
	}
	// Startup: done once the data set is loaded; generous (1h) for a big RDB/AOF. Asked
	// every second, so that a server up in a fraction of one is Ready then, not at the next
	// of 5 s rounds.
	c.StartupProbe = &corev1.Probe{ProbeHandler: ready, PeriodSeconds: 1, TimeoutSeconds: 5, FailureThreshold: 3600}
	c.ReadinessProbe = &corev1.Probe{ProbeHandler: ready, PeriodSeconds: readyPeriod, TimeoutSeconds: 5, FailureThreshold: readyFailures}
	// Alive: answers at all (an error reply such as -BUSY still proves the event loop runs);
	// restarted after a minute of silence.
	c.LivenessProbe = &corev1.Probe{ProbeHandler: alive, PeriodSeconds: 10, TimeoutSeconds: 5, FailureThreshold: 6}
}

// httpProbe asks valkey-start's path on the metrics port.
func httpProbe(path string) corev1.ProbeHandler {
	return corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
		Path: path, Port: intstr.FromInt32(MetricsPort), Scheme: corev1.URISchemeHTTP,
	}}
}

// cliPing runs valkey-cli's PING as the probes' user; strict (-e) fails on an error reply
// (-LOADING, -NOAUTH...), so a server that cannot serve is not Ready.
func cliPing(node *valkeyv1.ValkeyNode, strict bool) corev1.ProbeHandler {
	cmd := []string{"valkey-cli", "-p", fmt.Sprint(ClientPort)}
	if strict {
		cmd = []string{"valkey-cli", "-e", "-p", fmt.Sprint(ClientPort)}
	}
	cmd = append(append(cmd, probeUser(node)...), "ping")
	return corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: cmd}}
}
