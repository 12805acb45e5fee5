package valkeystart

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"valkey.io/operator/internal/valkeyconf"
	"valkey.io/operator/test/valkeyserver"
)

// TestProbesFollowTheServer starts a real server as a standalone node's pod does and asks
// the probes' paths as the kubelet does: both answer 200 once it serves; while a script
// keeps it busy, readiness fails (the server answers -BUSY) and liveness holds (it answers);
// once the script is killed, readiness is back.
func TestProbesFollowTheServer(t *testing.T) {
	const password = "secret"
	port, err := valkeyserver.FreePort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	metrics := "127.0.0.1:" + strconv.Itoa(port)
	addr := startWithAuth(t, t.TempDir(), &Wrapper{Password: password, MetricsAddr: metrics})
	eventually(t, 10*time.Second, "/readyz and /livez answer 200", func() bool {
		return probeStatus(metrics, valkeyconf.ReadyPath) == http.StatusOK && probeStatus(metrics, valkeyconf.AlivePath) == http.StatusOK
	})

	ctx := context.Background()
	if _, err := strAs(ctx, addr, "", password, "CONFIG", "SET", "busy-reply-threshold", "100"); err != nil {
		t.Fatal(err)
	}
	script := make(chan error, 1)
	go func() {
		_, err := strAs(ctx, addr, "", password, "EVAL", "while true do end", "0")
		script <- err
	}()
	eventually(t, 10*time.Second, "/readyz 503 while the server answers -BUSY", func() bool {
		return probeStatus(metrics, valkeyconf.ReadyPath) == http.StatusServiceUnavailable
	})
	if got := probeStatus(metrics, valkeyconf.AlivePath); got != http.StatusOK {
		t.Errorf("/livez answered %d while the server runs a script, want 200: it still answers", got)
	}
	if _, err := strAs(ctx, addr, "", password, "SCRIPT", "KILL"); err != nil {
		t.Fatal(err)
	}
	if err := <-script; err == nil {
		t.Errorf("the killed script answered without an error")
	}
	eventually(t, 10*time.Second, "/readyz 200 once the script is killed", func() bool {
		return probeStatus(metrics, valkeyconf.ReadyPath) == http.StatusOK
	})
}

// TestReadinessRefusesAWrongPassword: a server that refuses the password is alive, not ready,
// and the failed probe's body says why.
func TestReadinessRefusesAWrongPassword(t *testing.T) {
	dir := t.TempDir()
	addr := startWithAuth(t, dir, &Wrapper{Password: "right"})
	eventually(t, 10*time.Second, "the server answers", func() bool {
		_, err := strAs(context.Background(), addr, "", "right", "PING")
		return err == nil
	})
	p := (&Wrapper{Addr: addr, Password: "wrong", DialTimeout: time.Second}).newProber()
	defer p.close()
	mux := http.NewServeMux()
	p.handle(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	resp, err := http.Get(srv.URL + valkeyconf.ReadyPath)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "WRONGPASS") {
		t.Errorf("/readyz with a wrong password: %d %q, want 503 naming WRONGPASS", resp.StatusCode, body)
	}
	if got := probeStatus(strings.TrimPrefix(srv.URL, "http://"), valkeyconf.AlivePath); got != http.StatusOK {
		t.Errorf("/livez with a wrong password: %d, want 200: the server answered", got)
	}
}

// probeStatus is the status of GET path at addr, 0 when it does not answer.
func probeStatus(addr, path string) int {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + addr + path)
	if err != nil {
		return 0
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}
