package servertls

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
	"valkey.io/operator/topologycontroller/certs"
	"valkey.io/operator/topologycontroller/round"
)

// reloadRecheck is how soon servers asked to reload their certificate are looked at again:
// the kubelet writes a changed Secret into the pods' volumes within its sync period (about
// a minute), and until then a reload reads the old files.
const reloadRecheck = 2 * time.Second

// Reload compares the certificate each reachable server served when it was
// dialed this round with the Secret's, and asks the servers that serve another one to load
// their certificate files again (CONFIG SET of the same paths: Valkey and Redis reload the
// TLS context without a restart). It returns TLSReady (nil without a bundle).
func (sv *Servers) Reload(ctx context.Context, st *round.State, b *certs.Bundle) *metav1.Condition {
	if b == nil {
		return nil
	}
	var stale, failed []string
	for _, m := range st.SortedMembers() {
		served := st.Conns.ServedBy(m.Addr)
		if !m.Reachable() || served == nil || served.Equal(b.Leaf) {
			continue
		}
		stale = append(stale, m.Node.Name)
		if err := reloadTLS(ctx, st.Conns, m.Addr); err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", m.Node.Name, err))
		}
	}
	if len(stale) == 0 {
		c := status.Condition(valkeyv1.ConditionTLSReady, true, valkeyv1.ReasonCertificateServed, fmt.Sprintf(
			"every server serves the certificate with serial %x, valid until %s", b.Leaf.SerialNumber, b.Leaf.NotAfter.UTC().Format(time.RFC3339)))
		if cur := status.Get(st.Cluster.Status.Conditions, valkeyv1.ConditionTLSReady); cur != nil && cur.Reason == valkeyv1.ReasonCertificateReloading {
			sv.Recorder.Eventf(st.Cluster, nil, corev1.EventTypeNormal, valkeyv1.EventCertificateReloaded, "ReloadCertificate", "%s, loaded without a restart", c.Message)
		}
		return &c
	}
	msg := fmt.Sprintf("%d servers serve an older certificate than Secret's serial %x (%s): asked them to load it again without a restart; "+
		"the kubelet updates the mounted files within about a minute", len(stale), b.Leaf.SerialNumber, strings.Join(stale, ", "))
	if len(failed) > 0 {
		msg += "; the reload failed on " + strings.Join(failed, "; ")
	}
	c := status.Condition(valkeyv1.ConditionTLSReady, false, valkeyv1.ReasonCertificateReloading, msg)
	st.Wait("reloading the TLS certificate on "+strings.Join(stale, ", "), reloadRecheck)
	return &c
}

// reloadTLS makes the server at addr load its TLS files again: CONFIG SET of the file
// settings it has, to the same paths.
func reloadTLS(ctx context.Context, cs *round.Conns, addr string) error {
	r, err := cs.Do(ctx, addr, "CONFIG", "GET", "tls-*-file")
	if err != nil {
		return err
	}
	kv, err := r.AsStrMap()
	if err != nil {
		return fmt.Errorf("CONFIG GET tls-*-file on %s: %w", addr, err)
	}
	args := []string{"CONFIG", "SET"}
	for _, k := range []string{"tls-cert-file", "tls-key-file", "tls-ca-cert-file"} {
		if kv[k] != "" {
			args = append(args, k, kv[k])
		}
	}
	if len(args) == 2 {
		return fmt.Errorf("%s has no TLS files configured", addr)
	}
	return cs.OK(ctx, addr, args...)
}
