package topologycontroller_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"time"

	. "github.com/onsi/gomega"
	"github.com/valkey-io/valkey-go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/tlsconf"
)

// testCA is a CA a test issues certificates with, as cert-manager would.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA() *testCA {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	cert, err := x509.ParseCertificate(der)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue returns a PEM certificate and key for the names, valid from notBefore to notAfter.
func (ca *testCA) issue(names []string, notBefore, notAfter time.Time) (certPEM, keyPEM []byte) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "server"},
		DNSNames: names, NotBefore: notBefore, NotAfter: notAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})
}

// secretData is a cert-manager style Secret's data for a certificate of the names.
func (ca *testCA) secretData(names ...string) map[string][]byte {
	c, k := ca.issue(names, time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour))
	return map[string][]byte{"tls.crt": c, "tls.key": k, "ca.crt": ca.pem}
}

// clusterNames are the names a user's certificate for cluster name in ns must cover.
func clusterNames(ns, name string) []string {
	return []string{valkeyv1.ClientServiceName(name) + "." + ns + ".svc", "*." + valkeyv1.HeadlessServiceName(name) + "." + ns + ".svc"}
}

func putSecret(ns, name string, data map[string][]byte) {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Type: corev1.SecretTypeOpaque, Data: data}
	ctx := context.Background()
	if err := k8s.Create(ctx, s); err != nil {
		ExpectWithOffset(1, k8s.Get(ctx, clientKey(ns, name), s)).To(Succeed())
		s.Data = data
		ExpectWithOffset(1, k8s.Update(ctx, s)).To(Succeed())
	}
}

// newTLSCluster creates a ValkeyCluster with spec.tls.
func newTLSCluster(ns, name string, shards, replicas int32, tlsSpec map[string]any) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": valkeyv1.GroupVersion.String(),
		"kind":       "ValkeyCluster",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec":       map[string]any{"shards": int64(shards), "replicas": int64(replicas), "tls": tlsSpec},
	}}
	ExpectWithOffset(1, k8s.Create(context.Background(), u)).To(Succeed())
}

// servedCert is the certificate the server at addr serves, its chain verified against
// caPEM.
func servedCert(addr string, caPEM []byte) (*x509.Certificate, error) {
	pool, err := tlsconf.Pool(caPEM)
	if err != nil {
		return nil, err
	}
	var leaf *x509.Certificate
	cfg := tlsconf.ChainOnly(pool, func(c *x509.Certificate) { leaf = c })
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr, cfg)
	if err != nil {
		return nil, err
	}
	_ = conn.Close()
	return leaf, nil
}

// tlsCmd runs one command over TLS, trusting caPEM.
func tlsCmd(addr, pw string, caPEM []byte, args ...string) (string, error) {
	pool, err := tlsconf.Pool(caPEM)
	if err != nil {
		return "", err
	}
	c, err := valkey.NewClient(valkey.ClientOption{
		InitAddress: []string{addr}, Password: pw, ForceSingleClient: true, DisableCache: true, AlwaysRESP2: true,
		Dialer: net.Dialer{Timeout: time.Second}, TLSConfig: tlsconf.ChainOnly(pool, nil),
	})
	if err != nil {
		return "", err
	}
	defer c.Close()
	return c.Do(context.Background(), c.B().Arbitrary(args...).Build()).ToString()
}

func clientKey(ns, name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }

// pemBlock is the DER of the first PEM block.
func pemBlock(b []byte) []byte {
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil
	}
	return blk.Bytes
}
