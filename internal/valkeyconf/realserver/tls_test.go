package realserver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"

	"valkey.io/operator/internal/tlsconf"
	"valkey.io/operator/internal/valkeyconf"
	"valkey.io/operator/test/valkeyserver"
)

// TestRenderedTLSConfig starts a server built with TLS on a config rendered with spec.tls:
// it serves TLS on the client port and refuses plaintext, and after its certificate files
// change, CONFIG SET of the same tls-cert-file path (what the topology controller sends)
// makes it serve the new certificate without a restart.
func TestRenderedTLSConfig(t *testing.T) {
	if ok, why := valkeyserver.SupportsTLS(); !ok {
		t.Skip("TLS test skipped: " + why)
	}
	dir, tlsDir := t.TempDir(), t.TempDir()
	ca := writeCerts(t, tlsDir, nil)
	conf, err := valkeyconf.Render(valkeyconf.Params{DataDir: dir, TLS: &valkeyconf.TLS{Dir: tlsDir}})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "valkey.conf")
	if err := os.WriteFile(file, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := valkeyserver.Start(valkeyserver.Options{Dir: dir, ConfigFile: file, TLSDir: tlsDir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Kill() })

	pool := ca.Pool()
	first := served(t, s.Addr(), pool)
	c, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{s.Addr()}, ForceSingleClient: true, DisableCache: true,
		TLSConfig: tlsconf.ChainOnly(pool, nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	runID := infoRunID(t, c)
	plain, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{s.Addr()}, ForceSingleClient: true, DisableCache: true,
		Dialer: net.Dialer{Timeout: time.Second}})
	if err == nil {
		err = plain.Do(ctx, plain.B().Ping().Build()).Error()
		plain.Close()
	}
	if err == nil {
		t.Fatal("a plaintext PING was answered")
	}

	writeCerts(t, tlsDir, ca)
	if !served(t, s.Addr(), pool).Equal(first) {
		t.Fatal("the server loaded new files on its own")
	}
	if err := c.Do(ctx, c.B().Arbitrary("CONFIG", "SET", "tls-cert-file", filepath.Join(tlsDir, "tls.crt"),
		"tls-key-file", filepath.Join(tlsDir, "tls.key")).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if served(t, s.Addr(), pool).Equal(first) {
		t.Fatal("still serving the old certificate after CONFIG SET tls-cert-file")
	}
	if got := infoRunID(t, c); got != runID {
		t.Fatalf("run_id %s, was %s: the server restarted", got, runID)
	}
}

// writeCerts writes a new server certificate of ca into dir (a new CA when nil) and returns
// the CA.
func writeCerts(t *testing.T, dir string, ca *valkeyserver.CA) *valkeyserver.CA {
	t.Helper()
	var err error
	if ca == nil {
		if ca, err = valkeyserver.NewCA(); err != nil {
			t.Fatal(err)
		}
	}
	if err := ca.WriteServerFiles(dir); err != nil {
		t.Fatal(err)
	}
	return ca
}

// served is the certificate the server at addr serves.
func served(t *testing.T, addr string, pool *x509.CertPool) *x509.Certificate {
	t.Helper()
	var leaf *x509.Certificate
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr, tlsconf.ChainOnly(pool, func(c *x509.Certificate) { leaf = c }))
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.Close()
	return leaf
}

func infoRunID(t *testing.T, c valkey.Client) string {
	t.Helper()
	s, err := c.Do(context.Background(), c.B().Info().Section("server").Build()).ToString()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(s, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "run_id:"); ok {
			return v
		}
	}
	t.Fatal("no run_id")
	return ""
}
