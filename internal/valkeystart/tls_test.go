package valkeystart

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"valkey.io/operator/internal/tlsconf"
	"valkey.io/operator/test/valkeyserver"
)

// TestDialTLS: with the CA file valkey-start gets (--tls-ca-file), it reaches a TLS-only
// server at 127.0.0.1 (a name its certificate does not hold: the chain is verified, not the
// name); without TLS it does not.
func TestDialTLS(t *testing.T) {
	if ok, why := valkeyserver.SupportsTLS(); !ok {
		t.Skip("TLS test skipped: " + why)
	}
	dir := t.TempDir()
	ca, err := valkeyserver.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	if err := ca.WriteServerFiles(dir); err != nil {
		t.Fatal(err)
	}
	s, err := valkeyserver.Start(valkeyserver.Options{Cluster: true, Password: testPassword, TLSDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Kill() })
	cfg, err := tlsconf.FromCAFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	srv, err := dial(s.Addr(), "", testPassword, 2*time.Second, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.close()
	if _, err := srv.nodes(ctx); err != nil {
		t.Fatalf("CLUSTER NODES over TLS: %v", err)
	}
	plain, err := dial(s.Addr(), "", testPassword, time.Second, nil)
	if err == nil {
		_, err = plain.nodes(ctx)
		plain.close()
	}
	if err == nil {
		t.Fatal("reached a TLS-only server without TLS")
	}
	other, err := valkeyserver.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	wrong, err := dial(s.Addr(), "", testPassword, time.Second, tlsconf.ChainOnly(other.Pool(), nil))
	if err == nil {
		_, err = wrong.nodes(ctx)
		wrong.close()
	}
	if err == nil {
		t.Fatal("trusted a server certificate of another CA")
	}
}
