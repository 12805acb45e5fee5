package e2e

import (
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
	"valkey.io/operator/internal/tlsconf"
)

// redisTLSImage is Debian's redis-server and redis-cli, built with TLS (test/images/build.sh):
// the Valkey of the local cluster's image has no TLS.
const redisTLSImage = "valkey.local/redis-tls:dev"

// TLS on every link, on the local cluster: a cluster with tls.generate is checked clean over
// TLS from inside a pod, refuses plaintext, rolls under a TLS writer without losing an
// acknowledged key, and serves a renewed certificate without a restart.
var _ = Describe("TLS", Label("tls"), Ordered, func() {
	var cluster *valkeyv1.ValkeyCluster
	BeforeAll(func() {
		ns := newNamespace("tls")
		cluster = newTLSCluster(ns, "tls", &valkeyv1.TLSSpec{Generate: true})
		waitReady(cluster, 6*time.Minute)
		Eventually(func() string { return tlsReason(cluster) }).WithTimeout(3 * time.Minute).WithPolling(2 * time.Second).
			Should(Equal(valkeyv1.ReasonCertificateServed))
	})

	It("is clean for valkey-cli --tls --cluster check inside a pod, and refuses plaintext", func() {
		expectClusterCheckTLS(cluster)
		for _, addr := range podAddrs(cluster) {
			host, _, _ := strings.Cut(addr, ":")
			vc, err := dialNode(host, password(cluster))
			if err == nil {
				err = vc.Do(ctx, vc.B().Ping().Build()).Error()
				vc.Close()
			}
			Expect(err).To(HaveOccurred(), "a plaintext PING to %s", addr)
		}
	})

	It("rolls under a TLS writer without losing an acknowledged key", func() {
		w := startAckWriter(cluster, "tlsroll")
		Eventually(w.count).WithTimeout(time.Minute).Should(BeNumerically(">", 50))
		updateCluster(cluster, func(c *valkeyv1.ValkeyCluster) {
			c.Spec.Config = map[string]string{"hash-max-listpack-entries": "20000"}
		})
		waitRolled(cluster, 12*time.Minute)
		expectAcked(cluster, w, "tlsroll")
		expectClusterCheckTLS(cluster)
	})

	It("serves a renewed certificate without a restart", func() {
		before := restarts(cluster)
		old := servedSerials(cluster)
		renewed := forceRenewal(cluster)
		start := time.Now()
		Eventually(func() map[string]string { return servedSerials(cluster) }).WithTimeout(4 * time.Minute).WithPolling(2 * time.Second).
			Should(HaveEach(fmt.Sprintf("%x", renewed)))
		took := time.Since(start)
		GinkgoWriter.Printf("renewed certificate %x served everywhere %s after the renewal (was %v)\n", renewed, took, old)
		AddReportEntry("tls renewal served", took.String())
		Expect(restarts(cluster)).To(Equal(before), "no container restarted, no pod replaced")
		Eventually(func() string { return tlsReason(cluster) }).WithTimeout(time.Minute).Should(Equal(valkeyv1.ReasonCertificateServed))
		expectClusterCheckTLS(cluster)
	})
})

// newTLSCluster creates a 3-shard, 1-replica cluster of the TLS image with spec.tls (fixed
// at creation).
func newTLSCluster(ns, name string, spec *valkeyv1.TLSSpec) *valkeyv1.ValkeyCluster {
	c := &valkeyv1.ValkeyCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: valkeyv1.ValkeyClusterSpec{
			Shards: 3, Replicas: 1,
			ServerSpec: valkeyv1.ServerSpec{
				Image: redisTLSImage, TLS: spec,
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi"),
				}},
			},
		},
	}
	ExpectWithOffset(1, k8s.Create(ctx, c)).To(Succeed())
	return c
}

// waitRolled waits until every pod runs the current template (the roll is over) and the
// cluster is Ready again.
func waitRolled(c *valkeyv1.ValkeyCluster, timeout time.Duration) {
	EventuallyWithOffset(1, func(g Gomega) {
		for _, n := range clusterNodes(c) {
			rp := status.Get(n.Status.Conditions, valkeyv1.ConditionRollPending)
			g.Expect(rp).NotTo(BeNil(), "%s RollPending", n.Name)
			g.Expect(rp.Status == "False" && rp.ObservedGeneration == n.Generation).To(BeTrue(), "%s RollPending %+v", n.Name, rp)
		}
	}).WithTimeout(timeout).WithPolling(2 * time.Second).Should(Succeed())
	waitReady(c, timeout)
}

func tlsReason(c *valkeyv1.ValkeyCluster) string {
	if cond := status.Get(getCluster(c).Status.Conditions, valkeyv1.ConditionTLSReady); cond != nil {
		return cond.Reason
	}
	return ""
}

// tlsSecret is the cluster's certificate Secret.
func tlsSecret(c *valkeyv1.ValkeyCluster) *corev1.Secret {
	cur := getCluster(c)
	name := valkeyv1.TLSSecretName(c.Name)
	if cur.Spec.TLS != nil && cur.Spec.TLS.SecretName != "" {
		name = cur.Spec.TLS.SecretName
	}
	var s corev1.Secret
	ExpectWithOffset(2, k8s.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, &s)).To(Succeed())
	return &s
}

// clientTLS is the TLS configuration of a client of c's servers, trusting the CA of its
// certificate Secret; nil without spec.tls.
func clientTLS(c *valkeyv1.ValkeyCluster) *tls.Config {
	if getCluster(c).Spec.TLS == nil {
		return nil
	}
	pool, err := tlsconf.Pool(tlsSecret(c).Data["ca.crt"])
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return tlsconf.ChainOnly(pool, nil)
}

// expectClusterCheckTLS runs valkey-cli --tls --cluster check inside a pod of c.
func expectClusterCheckTLS(c *valkeyv1.ValkeyCluster) {
	n := clusterNodes(c)[0]
	out, err := kubectl("-n", c.Namespace, "exec", n.Status.Workload.PodName, "-c", "valkey", "--",
		"valkey-cli", "--user", valkeyv1.OperatorUser, "--tls", "--cacert", "/etc/valkey-tls/ca.crt", "--cluster", "check", "127.0.0.1:6379")
	ExpectWithOffset(1, err).NotTo(HaveOccurred(), out)
	ExpectWithOffset(1, out).To(ContainSubstring("[OK] All 16384 slots covered."), out)
	ExpectWithOffset(1, out).NotTo(ContainSubstring("[WARNING]"), out)
	ExpectWithOffset(1, out).NotTo(ContainSubstring("[ERR]"), out)
}

// servedSerials are the serials of the certificates c's servers serve, by address.
func servedSerials(c *valkeyv1.ValkeyCluster) map[string]string {
	pool, err := tlsconf.Pool(tlsSecret(c).Data["ca.crt"])
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	out := map[string]string{}
	for _, addr := range podAddrs(c) {
		var leaf *x509.Certificate
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", addr,
			tlsconf.ChainOnly(pool, func(l *x509.Certificate) { leaf = l }))
		if err != nil {
			out[addr] = "error: " + err.Error()
			continue
		}
		_ = conn.Close()
		out[addr] = fmt.Sprintf("%x", leaf.SerialNumber)
	}
	return out
}

// restarts are the restart count and UID of every pod of c, by node.
func restarts(c *valkeyv1.ValkeyCluster) map[string]string {
	out := map[string]string{}
	for _, n := range clusterNodes(c) {
		p := getPod(n)
		count, id := containerState(p, "valkey")
		out[n.Name] = fmt.Sprintf("%s/%d/%s", p.UID, count, id)
	}
	return out
}

// forceRenewal puts into the generated certificate Secret a certificate of the cluster's CA
// with less than a third of its validity left, as time would; the operator issues a new
// one. It returns the serial of the certificate the operator issues.
func forceRenewal(c *valkeyv1.ValkeyCluster) *big.Int {
	var caSecret corev1.Secret
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: valkeyv1.CASecretName(c.Name)}, &caSecret)).To(Succeed())
	ca, err := tls.X509KeyPair(caSecret.Data["tls.crt"], caSecret.Data["tls.key"])
	Expect(err).NotTo(HaveOccurred())
	caCert, err := x509.ParseCertificate(ca.Certificate[0])
	Expect(err).NotTo(HaveOccurred())
	s := tlsSecret(c)
	old, err := tls.X509KeyPair(s.Data["tls.crt"], s.Data["tls.key"])
	Expect(err).NotTo(HaveOccurred())
	oldCert, err := x509.ParseCertificate(old.Certificate[0])
	Expect(err).NotTo(HaveOccurred())
	tmpl := *oldCert
	tmpl.SerialNumber = big.NewInt(time.Now().UnixNano())
	tmpl.Subject = pkix.Name{CommonName: oldCert.Subject.CommonName}
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-80*24*time.Hour), time.Now().Add(10*24*time.Hour)
	der, err := x509.CreateCertificate(rand.Reader, &tmpl, caCert, old.PrivateKey.(*ecdsa.PrivateKey).Public(), ca.PrivateKey)
	Expect(err).NotTo(HaveOccurred())
	s.Data["tls.crt"] = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	Expect(k8s.Update(ctx, s)).To(Succeed())
	var issued *big.Int
	Eventually(func(g Gomega) {
		cur := tlsSecret(c)
		pair, err := tls.X509KeyPair(cur.Data["tls.crt"], cur.Data["tls.key"])
		g.Expect(err).NotTo(HaveOccurred())
		leaf, err := x509.ParseCertificate(pair.Certificate[0])
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(time.Until(leaf.NotAfter)).To(BeNumerically(">", 80*24*time.Hour), "renewed")
		issued = leaf.SerialNumber
	}).WithTimeout(2 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
	return issued
}
