package round

import (
	"crypto/tls"
	"crypto/x509"
	"sync"

	"valkey.io/operator/internal/tlsconf"
)

// connsTLS is the TLS side of a reconcile's clients: servers are dialed by pod IP, so
// their certificate chain is verified against the cluster's CA but not their name (a
// certificate need not name pod IPs), and the certificate each server serves is kept to
// tell which servers still serve an older one (see servertls.Servers.Reload).
type connsTLS struct {
	roots  *x509.CertPool
	mu     sync.Mutex
	served map[string]*x509.Certificate // by address
}

// UseTLS makes the clients of c speak TLS, trusting roots.
func (c *Conns) UseTLS(roots *x509.CertPool) {
	c.tls = &connsTLS{roots: roots, served: map[string]*x509.Certificate{}}
}

// config is the TLS configuration of a client of addr; nil without TLS.
func (t *connsTLS) config(addr string) *tls.Config {
	if t == nil {
		return nil
	}
	return tlsconf.ChainOnly(t.roots, func(leaf *x509.Certificate) {
		t.mu.Lock()
		defer t.mu.Unlock()
		t.served[addr] = leaf
	})
}

// ServedBy is the certificate the server at addr served when it was dialed; nil when it
// was not dialed (or without TLS).
func (c *Conns) ServedBy(addr string) *x509.Certificate {
	if c.tls == nil {
		return nil
	}
	c.tls.mu.Lock()
	defer c.tls.mu.Unlock()
	return c.tls.served[addr]
}
