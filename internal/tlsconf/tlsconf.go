// Package tlsconf builds the TLS client configurations the operator's connections to
// Valkey servers use: the server's certificate chain is verified against the cluster's CA,
// and its host name is not, since servers are dialed by pod IP or by 127.0.0.1, which a
// certificate need not name.
package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// ChainOnly is a client configuration that trusts the CAs in roots and verifies the
// server's chain, not its name. served, when set, receives the leaf certificate of every
// verified connection (the certificate the server serves now).
func ChainOnly(roots *x509.CertPool, served func(*x509.Certificate)) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		// The chain is verified below, against roots; only the host name is not.
		InsecureSkipVerify: true, //nolint:gosec // VerifyConnection verifies the chain
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("the server presented no certificate")
			}
			leaf := cs.PeerCertificates[0]
			inter := x509.NewCertPool()
			for _, c := range cs.PeerCertificates[1:] {
				inter.AddCert(c)
			}
			if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter}); err != nil {
				return fmt.Errorf("server certificate: %w", err)
			}
			if served != nil {
				served(leaf)
			}
			return nil
		},
	}
}

// Pool is a pool of the PEM certificates in pem; an error when it holds none.
func Pool(pem []byte) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, errors.New("no PEM certificate found")
	}
	return pool, nil
}

// FromCAFile is ChainOnly with the CAs of the PEM file at path.
func FromCAFile(path string) (*tls.Config, error) {
	b, err := os.ReadFile(path) //nolint:gosec // a path given by the pod template
	if err != nil {
		return nil, fmt.Errorf("read CA file: %w", err)
	}
	pool, err := Pool(b)
	if err != nil {
		return nil, fmt.Errorf("CA file %s: %w", path, err)
	}
	return ChainOnly(pool, nil), nil
}
