package topologycontroller_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/valkey-io/valkey-go"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/tlsconf"
	"valkey.io/operator/test/valkeyserver"
)

var _ = Describe("TLS on every link (servers built with TLS)", Ordered, func() {
	var (
		ns string
		f  *fakeWorkload
		pw string
		ca *testCA
	)
	BeforeAll(func() {
		if ok, why := valkeyserver.SupportsTLS(); !ok {
			fmt.Println("TLS specs skipped:", why) // shown by go test -v, as valkeyserver names its server
			Skip("TLS specs skipped: " + why)
		}
		ns = newNamespace()
		ca = newTestCA()
		putSecret(ns, "cert", ca.secretData(clusterNames(ns, "t")...))
		f = startFakeWorkload(ns)
		DeferCleanup(f.stop)
		newTLSCluster(ns, "t", 3, 1, map[string]any{"secretName": "cert"})
		pw = clusterPassword(ns, "t")
		Eventually(clusterReady(ns, "t"), formTimeout).Should(Succeed())
	})

	It("forms the cluster over TLS (clients, replication, bus) and refuses plaintext", func() {
		Eventually(func() error { return checkHealthyTLS(f, pw, ca.pem, 6) }, 30*time.Second).Should(Succeed())
		tlsCondition(ns, "t", true, valkeyv1.ReasonCertificateServed)
		for _, addr := range f.addrs() {
			_, err := cmd(addr, pw, "PING")
			Expect(err).To(HaveOccurred(), "plaintext PING to %s", addr)
		}
	})

	It("serves a renewed certificate without a restart", func() {
		before := runIDs(f, pw, ca.pem)
		renewed := ca.secretData(clusterNames(ns, "t")...)
		putSecret(ns, "cert", renewed)
		start := time.Now()
		Eventually(func() error { return servingEverywhere(f, ca.pem, parseCert(renewed["tls.crt"])) }, 30*time.Second, 200*time.Millisecond).Should(Succeed())
		AddReportEntry("renewed certificate served by all 6 servers after", time.Since(start).Round(10*time.Millisecond).String())
		Expect(runIDs(f, pw, ca.pem)).To(Equal(before), "no server restarted")
		tlsCondition(ns, "t", true, valkeyv1.ReasonCertificateServed)
		Eventually(func() int { return eventsWithReason(ns, valkeyv1.EventCertificateReloaded) }, 10*time.Second).Should(BeNumerically(">=", 1))
		Eventually(func() error { return checkHealthyTLS(f, pw, ca.pem, 6) }, 30*time.Second).Should(Succeed())
	})

	It("moves slots and their keys over TLS when scaling out", func() {
		writeKeysTLS(f.addrs(), pw, ca.pem, 2000)
		vc := getCluster(ns, "t")
		vc.Spec.Shards = 4
		Expect(k8s.Update(context.Background(), vc)).To(Succeed())
		Eventually(clusterReady(ns, "t"), formTimeout).Should(Succeed())
		Eventually(func() error { return checkHealthyTLS(f, pw, ca.pem, 8) }, 30*time.Second).Should(Succeed())
		var owned int
		for _, n := range listNodes(ns) {
			if n.Spec.Shard == 3 && n.Status.Topology != nil && n.Status.Topology.Role == valkeyv1.RolePrimary {
				owned = int(n.Status.Topology.Slots)
			}
		}
		Expect(owned).To(BeNumerically(">", 4000), "the new shard's primary owns its share of slots")
		Expect(missingKeysTLS(f.addrs(), pw, ca.pem, 2000)).To(BeZero())
	})

	It("changes nothing running while the Secret is refused", func() {
		current, err := servedCert(f.addrs()[0], ca.pem)
		Expect(err).NotTo(HaveOccurred())
		Expect(servingEverywhere(f, ca.pem, current)).To(Succeed())
		putSecret(ns, "cert", ca.secretData("other.example"))
		tlsCondition(ns, "t", false, valkeyv1.ReasonCertificateNamesNotCovered)
		vc := getCluster(ns, "t")
		vc.Spec.Image = "valkey/valkey:9.1.3-changed"
		Expect(k8s.Update(context.Background(), vc)).To(Succeed())
		tlsCondition(ns, "t", false, valkeyv1.ReasonCertificateNamesNotCovered) // observed at the new generation
		for _, n := range listNodes(ns) {
			Expect(n.Spec.Image).NotTo(Equal("valkey/valkey:9.1.3-changed"), "node %s changed", n.Name)
		}
		Expect(servingEverywhere(f, ca.pem, current)).To(Succeed(), "the refused certificate is not loaded")

		served := ca.secretData(clusterNames(ns, "t")...)
		putSecret(ns, "cert", served)
		Eventually(func() error { return servingEverywhere(f, ca.pem, parseCert(served["tls.crt"])) }, 30*time.Second, 200*time.Millisecond).Should(Succeed())
		Eventually(func() string { return getNode(ns, "t-0-0").Spec.Image }, 30*time.Second).Should(Equal("valkey/valkey:9.1.3-changed"))
	})
})

// writeKeysTLS writes n keys through a cluster client over TLS.
func writeKeysTLS(addrs []string, pw string, caPEM []byte, n int) {
	c := tlsClusterClient(addrs, pw, caPEM)
	defer c.Close()
	for i := 0; i < n; i++ {
		ExpectWithOffset(1, c.Do(context.Background(), c.B().Set().Key(fmt.Sprintf("k%d", i)).Value(fmt.Sprint(i)).Build()).Error()).To(Succeed())
	}
}

// missingKeysTLS counts the keys of writeKeysTLS that cannot be read back with their value.
func missingKeysTLS(addrs []string, pw string, caPEM []byte, n int) int {
	c := tlsClusterClient(addrs, pw, caPEM)
	defer c.Close()
	missing := 0
	for i := 0; i < n; i++ {
		if v, err := c.Do(context.Background(), c.B().Get().Key(fmt.Sprintf("k%d", i)).Build()).ToString(); err != nil || v != fmt.Sprint(i) {
			missing++
		}
	}
	return missing
}

func tlsClusterClient(addrs []string, pw string, caPEM []byte) valkey.Client {
	pool, err := tlsconf.Pool(caPEM)
	ExpectWithOffset(2, err).NotTo(HaveOccurred())
	c, err := valkey.NewClient(valkey.ClientOption{InitAddress: addrs, Password: pw, DisableCache: true, TLSConfig: tlsconf.ChainOnly(pool, nil)})
	ExpectWithOffset(2, err).NotTo(HaveOccurred())
	return c
}

// checkHealthyTLS: every server, reached over TLS, says cluster_state ok, knows n nodes and
// every replica's link to its primary (replication over TLS) is up.
func checkHealthyTLS(f *fakeWorkload, pw string, caPEM []byte, n int) error {
	addrs := f.addrs()
	if len(addrs) != n {
		return fmt.Errorf("%d servers, want %d", len(addrs), n)
	}
	for _, a := range addrs {
		info, err := tlsCmd(a, pw, caPEM, "CLUSTER", "INFO")
		if err != nil {
			return err
		}
		if s, k := infoField(info, "cluster_state"), infoField(info, "cluster_known_nodes"); s != "ok" || k != fmt.Sprint(n) {
			return fmt.Errorf("%s: cluster_state %s, known nodes %s", a, s, k)
		}
		repl, err := tlsCmd(a, pw, caPEM, "INFO", "replication")
		if err != nil {
			return err
		}
		if infoField(repl, "role") == "slave" && infoField(repl, "master_link_status") != "up" {
			return fmt.Errorf("%s: link to its primary is %s", a, infoField(repl, "master_link_status"))
		}
	}
	return nil
}

// servingEverywhere: every server serves the certificate want, its chain verified
// against caPEM.
func servingEverywhere(f *fakeWorkload, caPEM []byte, want *x509.Certificate) error {
	for _, a := range f.addrs() {
		got, err := servedCert(a, caPEM)
		if err != nil {
			return fmt.Errorf("%s: %w", a, err)
		}
		if !got.Equal(want) {
			return fmt.Errorf("%s serves serial %x, want %x", a, got.SerialNumber, want.SerialNumber)
		}
	}
	return nil
}

// runIDs are the servers' run_id by address: a restarted server has a new one.
func runIDs(f *fakeWorkload, pw string, caPEM []byte) map[string]string {
	ids := map[string]string{}
	for _, a := range f.addrs() {
		info, err := tlsCmd(a, pw, caPEM, "INFO", "server")
		ExpectWithOffset(1, err).NotTo(HaveOccurred())
		ids[a] = infoField(info, "run_id")
		ExpectWithOffset(1, ids[a]).NotTo(BeEmpty())
	}
	return ids
}

func parseCert(certPEM []byte) *x509.Certificate {
	c, err := x509.ParseCertificate(pemBlock(certPEM))
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return c
}

var _ = Describe("TLS with generated certificates (servers built with TLS)", func() {
	It("forms the cluster with a certificate covering every pod IP, served by every server", func() {
		if ok, why := valkeyserver.SupportsTLS(); !ok {
			Skip("TLS specs skipped: " + why)
		}
		ns := newNamespace()
		f := startFakeWorkload(ns)
		DeferCleanup(f.stop)
		newTLSCluster(ns, "gen", 3, 0, map[string]any{"generate": true})
		pw := clusterPassword(ns, "gen")
		Eventually(clusterReady(ns, "gen"), formTimeout).Should(Succeed())
		tlsCondition(ns, "gen", true, valkeyv1.ReasonCertificateServed)
		ca := generatedCA(ns, "gen")
		caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw})
		leaf := generatedCert(ns, "gen", ca, func(c *x509.Certificate) error {
			for _, a := range f.addrs() {
				host, _, _ := strings.Cut(a, ":")
				if c.VerifyHostname(host) != nil {
					return fmt.Errorf("pod IP %s not covered", host)
				}
			}
			return nil
		})
		Expect(servingEverywhere(f, caPEM, leaf)).To(Succeed())
		Expect(checkHealthyTLS(f, pw, caPEM, 3)).To(Succeed())
		AddReportEntry("certificates issued while forming 3 shards", eventsWithReason(ns, valkeyv1.EventCertificateIssued))
	})
})
