package servertls

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/topologycontroller/certs"
)

// Error is a certificate Secret the cluster cannot use. It is reported on the
// ValkeyCluster (TLSReady=False with its reason, and a Warning event), and nothing running
// changes until it is fixed: no node is created or changed, no roll approved, nothing
// reloaded. Secrets are not watched: it is looked at again after passwordRecheck.
type Error struct{ Reason, Msg string }

func (e *Error) Error() string { return e.Msg }

// Bundle returns the cluster's certificate (nil without spec.tls): the user's Secret,
// checked, or the generated one, issued or renewed as needed.
func (sv *Servers) Bundle(ctx context.Context, vc *valkeyv1.ValkeyCluster) (*certs.Bundle, error) {
	switch {
	case vc.Spec.TLS == nil:
		return nil, nil
	case vc.Spec.TLS.Generate:
		return sv.generatedTLS(ctx, vc)
	}
	return sv.userTLS(ctx, vc)
}

// userTLS reads and checks the Secret of tls.secretName: whole, valid now, and covering the
// names clients use.
func (sv *Servers) userTLS(ctx context.Context, vc *valkeyv1.ValkeyCluster) (*certs.Bundle, error) {
	name := vc.Spec.TLS.SecretName
	var s corev1.Secret
	if err := sv.APIReader.Get(ctx, client.ObjectKey{Namespace: vc.Namespace, Name: name}, &s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &Error{Reason: valkeyv1.ReasonTLSSecretMissing, Msg: fmt.Sprintf(
				"TLS Secret %s does not exist: create it with tls.crt, tls.key and ca.crt (a cert-manager Certificate with secretName %s makes one); "+
					"until then no node is created or changed", name, name)}
		}
		return nil, fmt.Errorf("get TLS Secret %s: %w", name, err)
	}
	b, err := certs.ParseBundle(s.Data, time.Now())
	if err != nil {
		return nil, &Error{Reason: valkeyv1.ReasonTLSSecretInvalid, Msg: fmt.Sprintf(
			"TLS Secret %s cannot be used: %v; nothing running changes until it is fixed", name, err)}
	}
	if missing := certs.Uncovered(b.Leaf, requiredNames(vc), nil); len(missing) > 0 {
		return nil, &Error{Reason: valkeyv1.ReasonCertificateNamesNotCovered, Msg: fmt.Sprintf(
			"the certificate in TLS Secret %s does not cover %s (it covers %s); clients that check the server's name would refuse it: "+
				"add them to its DNS names (a wildcard *.%s.%s.svc covers every pod); nothing running changes until then",
			name, strings.Join(missing, ", "), strings.Join(coveredNames(b), ", "), valkeyv1.HeadlessServiceName(vc.Name), vc.Namespace)}
	}
	return b, nil
}

// requiredNames are the DNS names a user's certificate must cover: the client Service's
// and every wanted pod's (valkey-<node>-0.valkey-<cluster>-nodes), in their <name>.<namespace>.svc form (clients in other namespaces
// use it; the longer .svc.<cluster domain> form is the user's choice).
func requiredNames(vc *valkeyv1.ValkeyCluster) []string {
	names := []string{valkeyv1.ClientServiceName(vc.Name) + "." + vc.Namespace + ".svc"}
	headless := valkeyv1.HeadlessServiceName(vc.Name) + "." + vc.Namespace + ".svc"
	for shard := int32(0); shard < vc.Spec.Shards; shard++ {
		for replica := int32(0); replica <= vc.Spec.Replicas; replica++ {
			names = append(names, valkeyv1.PodHostname(valkeyv1.NodeName(vc.Name, shard, replica))+"."+headless)
		}
	}
	return names
}

// serviceNames are the DNS names of a generated certificate: every form of the client
// Service's name and the wildcard of the pods' names under the headless Service.
func serviceNames(vc *valkeyv1.ValkeyCluster, domain string) []string {
	var out []string
	for _, svc := range []string{valkeyv1.ClientServiceName(vc.Name), "*." + valkeyv1.HeadlessServiceName(vc.Name)} {
		out = append(out, svc, svc+"."+vc.Namespace, svc+"."+vc.Namespace+".svc", svc+"."+vc.Namespace+".svc."+domain)
	}
	return out
}

// coveredNames lists what a certificate covers, for messages.
func coveredNames(b *certs.Bundle) []string {
	out := append([]string(nil), b.Leaf.DNSNames...)
	for _, ip := range b.Leaf.IPAddresses {
		out = append(out, ip.String())
	}
	sort.Strings(out)
	if len(out) == 0 {
		return []string{"no names"}
	}
	return out
}
