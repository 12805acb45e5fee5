package certs

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"

	corev1 "k8s.io/api/core/v1"

	"valkey.io/operator/internal/tlsconf"
)

// Lifetimes of the generated certificates. A server certificate is renewed once less than
// a third of its validity is left (30 days of 90).
const (
	caValidity     = 10 * 365 * 24 * time.Hour
	serverValidity = 90 * 24 * time.Hour
	renewDivisor   = 3
	// clockSkew backdates NotBefore, so that a server whose clock is a little behind
	// accepts a certificate issued just now.
	clockSkew = 5 * time.Minute
)

// KeyPair is a parsed certificate with its private key.
type KeyPair struct {
	Cert *x509.Certificate
	Key  crypto.Signer
}

// NewKeyPair makes an ECDSA P-256 key and a certificate for it from tmpl, signed by
// parent (self-signed when nil). It returns the PEM certificate and key.
func NewKeyPair(tmpl *x509.Certificate, parent *KeyPair) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, fmt.Errorf("generate serial: %w", err)
	}
	tmpl.SerialNumber = serial
	signerCert, signerKey := tmpl, crypto.Signer(key)
	if parent != nil {
		signerCert, signerKey = parent.Cert, parent.Key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signerCert, key.Public(), signerKey)
	if err != nil {
		return nil, nil, fmt.Errorf("sign certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encode key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), nil
}

// NewCA makes a cluster's CA: valid caValidity from now.
func NewCA(cluster string, now time.Time) (certPEM, keyPEM []byte, err error) {
	return NewKeyPair(&x509.Certificate{
		Subject:               pkix.Name{CommonName: "valkey " + cluster + " CA", Organization: []string{"valkey operator"}},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(caValidity),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}, nil)
}

// IssueServer issues a server certificate for the names and IPs, signed by ca, valid
// serverValidity from now. It serves as a client certificate too (replication and the
// cluster bus connect with it).
func IssueServer(ca *KeyPair, cn string, dnsNames []string, ips []net.IP, now time.Time) (certPEM, keyPEM []byte, err error) {
	return NewKeyPair(&x509.Certificate{
		Subject:     pkix.Name{CommonName: cn, Organization: []string{"valkey operator"}},
		DNSNames:    dnsNames,
		IPAddresses: ips,
		NotBefore:   now.Add(-clockSkew),
		NotAfter:    now.Add(serverValidity),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}, ca)
}

// ParseKeyPair parses a PEM certificate (the first of certPEM) and its key.
func ParseKeyPair(certPEM, keyPEM []byte) (*KeyPair, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	signer, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, errors.New("the key cannot sign")
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, err
	}
	return &KeyPair{Cert: cert, Key: signer}, nil
}

// Bundle is a whole certificate Secret: the served certificate (leaf, with its chain in
// tls.crt), its key, and the CAs of ca.crt.
type Bundle struct {
	Leaf  *x509.Certificate
	Roots *x509.CertPool
	CA    []byte
}

// ParseBundle checks a certificate Secret's data (tls.crt, tls.key, ca.crt): every key is
// there and parses, the key matches the certificate, the certificate chains to ca.crt and
// is valid at now. The error says what is wrong, for the user.
func ParseBundle(data map[string][]byte, now time.Time) (*Bundle, error) {
	for _, k := range []string{corev1.TLSCertKey, corev1.TLSPrivateKeyKey, CACertKey} {
		if len(data[k]) == 0 {
			return nil, fmt.Errorf("key %s is missing or empty", k)
		}
	}
	pair, err := tls.X509KeyPair(data[corev1.TLSCertKey], data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return nil, fmt.Errorf("tls.crt and tls.key: %w", err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("tls.crt: %w", err)
	}
	roots, err := tlsconf.Pool(data[CACertKey])
	if err != nil {
		return nil, errors.New("ca.crt holds no PEM certificate")
	}
	inter := x509.NewCertPool()
	for _, der := range pair.Certificate[1:] {
		if c, err := x509.ParseCertificate(der); err == nil {
			inter.AddCert(c)
		}
	}
	if now.After(leaf.NotAfter) {
		return nil, fmt.Errorf("tls.crt expired at %s", leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	_, err = leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
	if err != nil {
		return nil, fmt.Errorf("tls.crt is not signed by ca.crt: %w", err)
	}
	return &Bundle{Leaf: leaf, Roots: roots, CA: data[CACertKey]}, nil
}

// CACertKey is the key of the CA certificate in a certificate Secret (cert-manager's).
const CACertKey = "ca.crt"

// Uncovered are the DNS names and IPs that cert does not cover.
func Uncovered(cert *x509.Certificate, dnsNames, ips []string) []string {
	var out []string
	for _, n := range append(append([]string(nil), dnsNames...), ips...) {
		if cert.VerifyHostname(n) != nil {
			out = append(out, n)
		}
	}
	return out
}

// DueForRenewal tells whether less than a third of cert's validity is left at now.
func DueForRenewal(cert *x509.Certificate, now time.Time) bool {
	validity := cert.NotAfter.Sub(cert.NotBefore)
	return cert.NotAfter.Sub(now) < validity/renewDivisor
}
