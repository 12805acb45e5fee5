package topologycontroller_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// tlsCondition waits for the cluster's TLSReady to have status ok and reason, and returns
// its message.
func tlsCondition(ns, name string, ok bool, reason string) string {
	var msg string
	EventuallyWithOffset(1, func() error {
		vc := getCluster(ns, name)
		c := status.Get(vc.Status.Conditions, valkeyv1.ConditionTLSReady)
		want := metav1.ConditionFalse
		if ok {
			want = metav1.ConditionTrue
		}
		if c == nil || c.Status != want || c.Reason != reason || vc.Status.ObservedGeneration != vc.Generation {
			return fmt.Errorf("TLSReady %+v, want %s %s", c, want, reason)
		}
		msg = c.Message
		return nil
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	return msg
}

var _ = Describe("TLS certificate Secret refused", func() {
	type badSecret struct {
		data   func(ns string) map[string][]byte // nil: no Secret
		reason string
		says   []string
	}
	DescribeTable("reports TLSReady=False with a Warning event and creates no node until the Secret is fixed",
		func(b badSecret) {
			ns := newNamespace()
			if b.data != nil {
				putSecret(ns, "cert", b.data(ns))
			}
			newTLSCluster(ns, "c", 3, 0, map[string]any{"secretName": "cert"})
			msg := tlsCondition(ns, "c", false, b.reason)
			for _, s := range b.says {
				Expect(msg).To(ContainSubstring(strings.ReplaceAll(s, "NS", ns)))
			}
			Eventually(func() int { return eventsWithReason(ns, b.reason) }, 10*time.Second).Should(BeNumerically(">=", 1))
			Expect(listNodes(ns)).To(BeEmpty(), "no node is created while the certificate Secret is refused")

			putSecret(ns, "cert", newTestCA().secretData(clusterNames(ns, "c")...))
			Eventually(func() int { return len(listNodes(ns)) }, 30*time.Second).Should(Equal(3))
		},
		Entry("missing", badSecret{reason: valkeyv1.ReasonTLSSecretMissing, says: []string{"cert does not exist"}}),
		Entry("without ca.crt", badSecret{
			data: func(ns string) map[string][]byte {
				d := newTestCA().secretData(clusterNames(ns, "c")...)
				delete(d, "ca.crt")
				return d
			},
			reason: valkeyv1.ReasonTLSSecretInvalid, says: []string{"key ca.crt is missing"},
		}),
		Entry("with the key of another certificate", badSecret{
			data: func(ns string) map[string][]byte {
				ca := newTestCA()
				d := ca.secretData(clusterNames(ns, "c")...)
				d["tls.key"] = ca.secretData(clusterNames(ns, "c")...)["tls.key"]
				return d
			},
			reason: valkeyv1.ReasonTLSSecretInvalid, says: []string{"tls.crt and tls.key"},
		}),
		Entry("signed by another CA", badSecret{
			data: func(ns string) map[string][]byte {
				d := newTestCA().secretData(clusterNames(ns, "c")...)
				d["ca.crt"] = newTestCA().pem
				return d
			},
			reason: valkeyv1.ReasonTLSSecretInvalid, says: []string{"not signed by ca.crt"},
		}),
		Entry("expired", badSecret{
			data: func(ns string) map[string][]byte {
				ca := newTestCA()
				c, k := ca.issue(clusterNames(ns, "c"), time.Now().Add(-48*time.Hour), time.Now().Add(-time.Hour))
				return map[string][]byte{"tls.crt": c, "tls.key": k, "ca.crt": ca.pem}
			},
			reason: valkeyv1.ReasonTLSSecretInvalid, says: []string{"expired"},
		}),
		Entry("not covering the names", badSecret{
			data:   func(string) map[string][]byte { return newTestCA().secretData("valkey.example.com") },
			reason: valkeyv1.ReasonCertificateNamesNotCovered,
			says:   []string{"valkey-c.NS.svc", "valkey-c-0-0-0.valkey-c-nodes.NS.svc", "valkey-c-2-0-0.valkey-c-nodes.NS.svc", "valkey.example.com"},
		}),
	)
})

var _ = Describe("Generated certificates", func() {
	It("keeps a CA and issues the servers' certificate for the Services' names and the pod IPs, renewing it before it expires", func() {
		ns := newNamespace()
		newTLSCluster(ns, "g", 1, 0, map[string]any{"generate": true})
		ca := generatedCA(ns, "g")
		leaf := generatedCert(ns, "g", ca, nil)
		pub, ok := leaf.PublicKey.(*ecdsa.PublicKey)
		Expect(ok && pub.Curve == elliptic.P256()).To(BeTrue(), "ECDSA P-256")
		Expect(leaf.NotAfter.Sub(leaf.NotBefore)).To(BeNumerically("~", 90*24*time.Hour, time.Hour))
		for _, name := range []string{"valkey-g", "valkey-g." + ns + ".svc", "valkey-g." + ns + ".svc.cluster.local",
			"valkey-g-0-0-0.valkey-g-nodes." + ns + ".svc", "valkey-g-0-0-0.valkey-g-nodes." + ns + ".svc.cluster.local"} {
			Expect(leaf.VerifyHostname(name)).To(Succeed(), name)
		}
		Eventually(func() int { return eventsWithReason(ns, valkeyv1.EventCertificateIssued) }, 10*time.Second).Should(BeNumerically(">=", 1))
		expiry := metricValue("valkey_cluster_tls_certificate_expiry_timestamp_seconds", map[string]string{"namespace": ns, "cluster": "g"})
		in90days := float64(time.Now().Add(90 * 24 * time.Hour).Unix())
		Eventually(expiry, 20*time.Second, 200*time.Millisecond).Should(BeNumerically("~", in90days, 3600), "the certificate's expiry is exported")

		By("a pod IP not covered: issued again")
		Eventually(func() int { return len(listNodes(ns)) }, 20*time.Second).Should(Equal(1))
		n := getNode(ns, "g-0-0")
		a := status.Applier{Client: k8s, FieldManager: valkeyv1.FieldManagerWorkload}
		Expect(a.ApplyNode(context.Background(), n, status.WorkloadShare{
			Conditions: []metav1.Condition{status.Condition(valkeyv1.ConditionWorkloadReady, false, valkeyv1.ReasonPodNotReady, "")},
			Workload:   &valkeyv1.WorkloadStatus{Kind: "StatefulSet", Name: "valkey-g-0-0", PodName: "valkey-g-0-0-0", PodIP: "10.1.2.3"},
		})).To(Succeed())
		withIP := generatedCert(ns, "g", ca, func(c *x509.Certificate) error {
			if c.VerifyHostname("10.1.2.3") != nil {
				return fmt.Errorf("pod IP not covered yet: %v", c.IPAddresses)
			}
			return nil
		})
		Expect(withIP.SerialNumber).NotTo(Equal(leaf.SerialNumber))

		By("less than a third of its validity left: renewed")
		caKey := generatedCAKey(ns, "g")
		due := &testCA{cert: ca, key: caKey, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw})}
		c, k := due.issue(clusterNames(ns, "g"), time.Now().Add(-80*24*time.Hour), time.Now().Add(10*24*time.Hour))
		putSecret(ns, valkeyv1.TLSSecretName("g"), map[string][]byte{"tls.crt": c, "tls.key": k, "ca.crt": due.pem})
		renewed := generatedCert(ns, "g", ca, func(c *x509.Certificate) error {
			if time.Until(c.NotAfter) < 80*24*time.Hour {
				return fmt.Errorf("not renewed yet: expires %s", c.NotAfter)
			}
			return nil
		})
		Expect(renewed.VerifyHostname("10.1.2.3")).To(Succeed())
	})
})

// generatedCA is the cluster's generated CA certificate, once made.
func generatedCA(ns, name string) *x509.Certificate {
	var s corev1.Secret
	EventuallyWithOffset(1, func() error { return k8s.Get(context.Background(), clientKey(ns, valkeyv1.CASecretName(name)), &s) }, 20*time.Second).Should(Succeed())
	ExpectWithOffset(1, metav1.GetControllerOf(&s)).NotTo(BeNil())
	b, _ := pem.Decode(s.Data["tls.crt"])
	ExpectWithOffset(1, b).NotTo(BeNil())
	c, err := x509.ParseCertificate(b.Bytes)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	ExpectWithOffset(1, c.IsCA).To(BeTrue())
	return c
}

func generatedCAKey(ns, name string) *ecdsa.PrivateKey {
	var s corev1.Secret
	ExpectWithOffset(1, k8s.Get(context.Background(), clientKey(ns, valkeyv1.CASecretName(name)), &s)).To(Succeed())
	b, _ := pem.Decode(s.Data["tls.key"])
	k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return k.(*ecdsa.PrivateKey)
}

// generatedCert waits for the cluster's generated certificate Secret to hold a certificate
// signed by ca (with ca.crt for clients) that passes check, and returns it.
func generatedCert(ns, name string, ca *x509.Certificate, check func(*x509.Certificate) error) *x509.Certificate {
	var leaf *x509.Certificate
	EventuallyWithOffset(1, func() error {
		var s corev1.Secret
		if err := k8s.Get(context.Background(), clientKey(ns, valkeyv1.TLSSecretName(name)), &s); err != nil {
			return err
		}
		if s.Type != corev1.SecretTypeTLS || metav1.GetControllerOf(&s) == nil {
			return fmt.Errorf("Secret type %s, controller %v", s.Type, metav1.GetControllerOf(&s))
		}
		b, _ := pem.Decode(s.Data["tls.crt"])
		if b == nil {
			return fmt.Errorf("no tls.crt")
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return err
		}
		caBlock, _ := pem.Decode(s.Data["ca.crt"])
		if caBlock == nil || string(caBlock.Bytes) != string(ca.Raw) || c.CheckSignatureFrom(ca) != nil {
			return fmt.Errorf("not signed by the cluster's CA, or ca.crt is not that CA")
		}
		if check != nil {
			if err := check(c); err != nil {
				return err
			}
		}
		leaf = c
		return nil
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	return leaf
}

var _ = Describe("Generated CA deleted while nodes run", func() {
	It("is not replaced: TLSReady=False TLSSecretMissing, and nothing changes", func() {
		ns := newNamespace()
		newTLSCluster(ns, "d", 1, 0, map[string]any{"generate": true})
		ca := generatedCA(ns, "d")
		before := generatedCert(ns, "d", ca, nil)
		Eventually(func() int { return len(listNodes(ns)) }, 20*time.Second).Should(Equal(1))
		var s corev1.Secret
		Expect(k8s.Get(context.Background(), clientKey(ns, valkeyv1.CASecretName("d")), &s)).To(Succeed())
		Expect(k8s.Delete(context.Background(), &s)).To(Succeed())
		msg := tlsCondition(ns, "d", false, valkeyv1.ReasonTLSSecretMissing)
		Expect(msg).To(ContainSubstring("restore d-ca"))
		Eventually(func() int { return eventsWithReason(ns, valkeyv1.ReasonTLSSecretMissing) }, 10*time.Second).Should(BeNumerically(">=", 1))
		err := k8s.Get(context.Background(), clientKey(ns, valkeyv1.CASecretName("d")), &s)
		Expect(err).To(HaveOccurred(), "no new CA")
		Expect(generatedCert(ns, "d", ca, nil).SerialNumber).To(Equal(before.SerialNumber), "the certificate is not re-issued")
	})
})
