package servertls

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/topologycontroller/certs"
)

// generatedTLS keeps the cluster's CA (Secret <cluster>-ca) and its servers' certificate
// (Secret <cluster>-tls), issuing the certificate again when it is missing or damaged, not
// signed by the CA, due for renewal, or when a pod IP is not covered.
func (sv *Servers) generatedTLS(ctx context.Context, vc *valkeyv1.ValkeyCluster) (*certs.Bundle, error) {
	ca, caPEM, err := sv.clusterCA(ctx, vc)
	if err != nil {
		return nil, err
	}
	ips, err := sv.podIPs(ctx, vc)
	if err != nil {
		return nil, err
	}
	name := valkeyv1.TLSSecretName(vc.Name)
	var s corev1.Secret
	err = sv.APIReader.Get(ctx, client.ObjectKey{Namespace: vc.Namespace, Name: name}, &s)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("get TLS Secret %s: %w", name, err)
	}
	now := time.Now()
	exists := err == nil
	if exists && !metav1.IsControlledBy(&s, vc) {
		return nil, generatedNotOwned(vc, name, "the servers' certificate")
	}
	why := "no certificate yet"
	if exists {
		b, bad := certs.ParseBundle(s.Data, now)
		why = reissueReason(b, bad, caPEM, serviceNames(vc, sv.ClusterDomain), ips, now)
		if why == "" {
			return b, nil
		}
	}
	return sv.issue(ctx, vc, &s, exists, ca, caPEM, ips, why)
}

// reissueReason says why a generated certificate must be issued again, "" when it is good.
func reissueReason(b *certs.Bundle, bad error, caPEM []byte, names, ips []string, now time.Time) string {
	switch {
	case bad != nil:
		return "the certificate Secret was damaged: " + bad.Error()
	case !bytes.Equal(b.CA, caPEM):
		return "the CA changed"
	case certs.DueForRenewal(b.Leaf, now):
		return fmt.Sprintf("less than a third of its validity is left (it expires at %s)", b.Leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	if missing := certs.Uncovered(b.Leaf, names, ips); len(missing) > 0 {
		return "it does not cover " + strings.Join(missing, ", ")
	}
	return ""
}

// issue issues the servers' certificate and writes it into the TLS Secret s (created when
// it does not exist), with the CA for clients to trust.
func (sv *Servers) issue(ctx context.Context, vc *valkeyv1.ValkeyCluster, s *corev1.Secret, exists bool, ca *certs.KeyPair, caPEM []byte, ips []string, why string) (*certs.Bundle, error) {
	var parsed []net.IP
	for _, ip := range ips {
		parsed = append(parsed, net.ParseIP(ip))
	}
	certPEM, keyPEM, err := certs.IssueServer(ca, valkeyv1.ClientServiceName(vc.Name)+"."+vc.Namespace+".svc",
		serviceNames(vc, sv.ClusterDomain), parsed, time.Now())
	if err != nil {
		return nil, err
	}
	data := map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM, certs.CACertKey: caPEM}
	if err := sv.Keeper.WriteSecret(ctx, vc, s, exists, valkeyv1.TLSSecretName(vc.Name), corev1.SecretTypeTLS, data); err != nil {
		return nil, err
	}
	b, err := certs.ParseBundle(data, time.Now())
	if err != nil {
		return nil, fmt.Errorf("check the issued certificate: %w", err)
	}
	sv.Recorder.Eventf(vc, nil, corev1.EventTypeNormal, valkeyv1.EventCertificateIssued, "IssueCertificate",
		"issued the servers' certificate (serial %x, valid until %s) into Secret %s: %s",
		b.Leaf.SerialNumber, b.Leaf.NotAfter.UTC().Format(time.RFC3339), valkeyv1.TLSSecretName(vc.Name), why)
	return b, nil
}

// clusterCA returns the cluster's CA, made (Secret <cluster>-ca, owned by the cluster) when
// missing before the cluster has nodes. A damaged CA Secret, or one deleted while nodes
// run, is reported, not replaced: the servers trust it.
func (sv *Servers) clusterCA(ctx context.Context, vc *valkeyv1.ValkeyCluster) (*certs.KeyPair, []byte, error) {
	name := valkeyv1.CASecretName(vc.Name)
	var s corev1.Secret
	err := sv.APIReader.Get(ctx, client.ObjectKey{Namespace: vc.Namespace, Name: name}, &s)
	if err == nil && !metav1.IsControlledBy(&s, vc) {
		return nil, nil, generatedNotOwned(vc, name, "the cluster's CA")
	}
	if err == nil {
		ca, perr := certs.ParseKeyPair(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey])
		if perr != nil {
			return nil, nil, &Error{Reason: valkeyv1.ReasonTLSSecretInvalid, Msg: fmt.Sprintf(
				"the cluster's CA Secret %s cannot be used (%v): delete it, and a new CA and certificate are made (servers reload them without a restart)", name, perr)}
		}
		return ca, s.Data[corev1.TLSCertKey], nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, nil, fmt.Errorf("get CA Secret %s: %w", name, err)
	}
	if nodes, err := sv.Keeper.OwnedNodes(ctx, vc); err != nil || nodes > 0 {
		if err != nil {
			return nil, nil, err
		}
		// A new CA would not be trusted by the running servers, nor trust them.
		return nil, nil, &Error{Reason: valkeyv1.ReasonTLSSecretMissing, Msg: fmt.Sprintf(
			"the cluster's CA Secret %s was deleted while %d nodes run with certificates it signed; not making a new CA, which they would not trust: "+
				"restore %s (tls.crt and tls.key of the CA; ca.crt of Secret %s holds its certificate)", name, nodes, name, valkeyv1.TLSSecretName(vc.Name))}
	}
	certPEM, keyPEM, err := certs.NewCA(vc.Name, time.Now())
	if err != nil {
		return nil, nil, err
	}
	data := map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM}
	if err := sv.Keeper.WriteSecret(ctx, vc, &s, false, name, corev1.SecretTypeTLS, data); err != nil {
		return nil, nil, err
	}
	ca, err := certs.ParseKeyPair(certPEM, keyPEM)
	return ca, certPEM, err
}

// generatedNotOwned refuses a Secret of a generated TLS name that the cluster does not
// control: a Secret of someone else (cert-manager's, a company CA) is neither overwritten nor
// trusted as the cluster's CA.
func generatedNotOwned(vc *valkeyv1.ValkeyCluster, name, what string) *Error {
	return &Error{Reason: valkeyv1.ReasonTLSSecretNotOwned, Msg: fmt.Sprintf(
		"Secret %s, where tls.generate keeps %s, exists and is not owned by ValkeyCluster %s: it is neither used nor overwritten; "+
			"delete or rename it, or give your own certificate with tls.secretName", name, what, vc.Name)}
}

// podIPs are the pod IPs of the cluster's nodes (status.workload.podIP), sorted.
func (sv *Servers) podIPs(ctx context.Context, vc *valkeyv1.ValkeyCluster) ([]string, error) {
	var list valkeyv1.ValkeyNodeList
	if err := sv.Client.List(ctx, &list, client.InNamespace(vc.Namespace), client.MatchingLabels{valkeyv1.LabelCluster: vc.Name}); err != nil {
		return nil, fmt.Errorf("list ValkeyNodes of %s: %w", vc.Name, err)
	}
	var ips []string
	for i := range list.Items {
		n := &list.Items[i]
		if w := n.Status.Workload; w != nil && w.PodIP != "" && metav1.IsControlledBy(n, vc) && net.ParseIP(w.PodIP) != nil {
			ips = append(ips, w.PodIP)
		}
	}
	sort.Strings(ips)
	return ips, nil
}
