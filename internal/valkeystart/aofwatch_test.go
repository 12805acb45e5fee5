package valkeystart

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"valkey.io/operator/internal/clusternodes"
	"valkey.io/operator/internal/volumeusage"
	"valkey.io/operator/test/valkeyserver"
)

// TestAOFRewrittenAfterAWriteError fills the file system of a wrapped server with AOF until
// its AOF cannot be written (writes refused with MISCONF), then frees it: the wrapper has the
// server rewrite its AOF from memory, and a server started afterwards on the directory loads
// every key that was acknowledged. The file system is a small tmpfs (mounting it needs root).
func TestAOFRewrittenAfterAWriteError(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount a tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	s, err := valkeyserver.Start(valkeyserver.Options{Password: testPassword, Dir: dir, Config: []string{"appendonly yes", "save \"\""}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Kill(); err != nil {
		t.Fatal(err)
	}
	metricsAddr := freeAddr(t)
	_, logs, sigs, exit := runWrapperWith(t, s, func(w *Wrapper) { w.MetricsAddr = metricsAddr })
	ctx := context.Background()
	eventually(t, 15*time.Second, "the wrapped server answers", func() bool {
		_, err := str(ctx, s.Addr(), "PING")
		return err == nil
	})

	var acked []string
	for i := range 500 {
		key := fmt.Sprintf("before-%d", i)
		do(t, s.Addr(), "SET", key, strings.Repeat("v", 100))
		acked = append(acked, key)
	}
	filler := filepath.Join(dir, "filler")
	fillFileSystem(t, filler)
	refused := ""
	for i := 0; refused == "" && i < 100000; i++ {
		key := fmt.Sprintf("k%d", i)
		if _, err := str(ctx, s.Addr(), "SET", key, strings.Repeat("v", 100)); err != nil {
			refused = err.Error()
			break
		}
		acked = append(acked, key)
	}
	t.Logf("%d keys written, then: %s", len(acked), refused)
	if !strings.Contains(refused, "MISCONF") {
		t.Fatalf("writes were not refused for the AOF: %q", refused)
	}
	eventually(t, 10*time.Second, "the wrapper sees the AOF error", func() bool {
		return strings.Contains(logs.String(), "could not write or sync its AOF")
	})
	full := scrape(t, metricsAddr)
	if full.Persistence != "aof" || full.Percent() < 99 {
		t.Fatalf("metrics of the full volume: %+v, want the AOF failing at 100 %%", full)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	var out string
	defer func() {
		if t.Failed() {
			t.Logf("INFO persistence:\n%s\nwrapper log:\n%s", out, logs)
		}
	}()
	eventually(t, 30*time.Second, "the AOF rewritten after the error", func() bool {
		var err error
		out, err = str(ctx, s.Addr(), "INFO", "persistence")
		info := clusternodes.ParseInfo(out)
		return err == nil && info["aof_rewrites"] != "0" && info["aof_rewrite_in_progress"] == "0" &&
			info["aof_last_bgrewrite_status"] == "ok" && info["aof_last_write_status"] == "ok"
	})
	if again := scrape(t, metricsAddr); again.Persistence != volumeusage.PersistenceOK || again.Percent() > 50 {
		t.Errorf("metrics after the space was freed: %+v, want ok and mostly free", again)
	}
	if !strings.Contains(logs.String(), "BGREWRITEAOF") {
		t.Errorf("the wrapper did not say it rewrote the AOF; log:\n%s", logs)
	}

	sigs <- syscall.SIGTERM
	<-exit
	again, err := valkeyserver.Start(valkeyserver.Options{Password: testPassword, Dir: dir, Config: []string{"appendonly yes", "save \"\""}})
	if err != nil {
		t.Fatalf("a server started on the directory after the error: %v; wrapper log:\n%s", err, logs)
	}
	t.Cleanup(func() { _ = again.Kill() })
	if lost := missingValues(t, again.Addr(), acked); lost > 0 {
		t.Fatalf("%d of %d acknowledged keys missing after a restart; wrapper log:\n%s", lost, len(acked), logs)
	}
	t.Logf("%d keys, 0 lost; wrapper log:\n%s", len(acked), logs)
}

// fillFileSystem writes zeros to path until its file system is full.
func fillFileSystem(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return
		}
	}
}

// missingValues counts the keys the server at addr does not hold.
func missingValues(t *testing.T, addr string, keys []string) int {
	t.Helper()
	n := 0
	for _, k := range keys {
		if v, err := str(context.Background(), addr, "GET", k); err != nil || v == "" {
			n++
		}
	}
	return n
}

// The server's output is passed on whole, and a line telling of an AOF error, even split
// across writes, raises the flag the watcher reads.
func TestAOFLogSeesAnErrorInTheServersOutput(t *testing.T) {
	var out strings.Builder
	var damaged atomic.Bool
	l := &aofLog{out: &out, damaged: &damaged}
	for _, chunk := range []string{"14:M 01 Dec * Ready to accept connections\n", "14:M 01 Dec # Error writing to the AOF ", "file: No space left on device\n"} {
		if _, err := l.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(chunk, "14:M 01 Dec * Ready") && damaged.Load() {
			t.Fatal("a line of no AOF error raised the flag")
		}
	}
	if !damaged.Load() {
		t.Fatal("an AOF write error split across two writes was not seen")
	}
	if !strings.Contains(out.String(), "Ready to accept connections") || !strings.HasSuffix(out.String(), "No space left on device\n") {
		t.Fatalf("the output was not passed on whole: %q", out.String())
	}
}

// freeAddr is a loopback address nothing listens on at the moment.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String()
}

// scrape reads the wrapper's metrics as the volume controller does.
func scrape(t *testing.T, addr string) volumeusage.Figure {
	t.Helper()
	var f volumeusage.Figure
	var err error
	eventually(t, 5*time.Second, "the metrics answer", func() bool {
		f, err = volumeusage.Fetch(context.Background(), http.DefaultClient, "http://"+addr+"/metrics")
		return err == nil && f.Persistence != volumeusage.PersistenceUnknown
	})
	return f
}
