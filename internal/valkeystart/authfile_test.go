package valkeystart

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"valkey.io/operator/internal/clusternodes"
	"valkey.io/operator/internal/valkeyconf"
	"valkey.io/operator/test/valkeyserver"
)

// TestAuthFileMakesTheServerRequireThePassword starts a real server on a valkey.conf
// rendered for a node with a password (it includes the auth file): the server refuses clients
// without the password, accepts it (quotes, backslashes, spaces and non-ASCII bytes
// included), and the password is on no command line.
func TestAuthFileMakesTheServerRequireThePassword(t *testing.T) {
	const token = "Zq7xK"                                      // in no path or name of the test
	const password = "pa\"ss \\" + token + "\tw\xc3\xb6rd$(X)" // quotes, backslash, tab, non-ASCII
	bin, err := valkeyserver.Binary()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	port, err := valkeyserver.FreePort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	auth := filepath.Join(dir, "auth.conf")
	rendered, err := valkeyconf.Render(valkeyconf.Params{DataDir: dir, AuthFile: auth})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(rendered, token) {
		t.Fatal("the rendered config holds the password")
	}
	if err := os.WriteFile(filepath.Join(dir, "rendered.conf"), []byte(rendered), 0o600); err != nil {
		t.Fatal(err)
	}
	// The rendered config as the pod loads it, then the loopback address and free ports
	// where the pod has its IP and fixed ports.
	conf := filepath.Join(dir, "valkey.conf")
	lines := []string{"include " + filepath.Join(dir, "rendered.conf"), "bind 127.0.0.1", "port " + strconv.Itoa(port),
		"cluster-port " + strconv.Itoa(port+10000), "logfile " + filepath.Join(dir, "server.log")}
	if err := os.WriteFile(conf, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sigs := make(chan os.Signal, 1)
	w := &Wrapper{DataDir: dir, Addr: addr, Password: password, AuthFile: auth, DialTimeout: time.Second,
		Log: log.New(&syncBuffer{}, "", 0), Signals: sigs}
	exit := make(chan int, 1)
	go func() { exit <- w.Run(context.Background(), []string{bin, conf}) }()
	t.Cleanup(func() {
		sigs <- syscall.SIGKILL
		<-exit
	})

	ctx := context.Background()
	eventually(t, 10*time.Second, "the server answers", func() bool {
		_, err := strOnce(ctx, addr, "", "PING")
		return err != nil && strings.Contains(err.Error(), "NOAUTH")
	})
	if _, err := strOnce(ctx, addr, "wrong", "PING"); err == nil {
		t.Fatal("a wrong password was accepted")
	}
	if out, err := strOnce(ctx, addr, password, "PING"); err != nil || out != "PONG" {
		t.Fatalf("PING with the password: %q, %v", out, err)
	}
	if st, err := os.Stat(auth); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("auth file: %v, %v (want mode 0600)", st, err)
	}
	info, err := strOnce(ctx, addr, password, "INFO", "server")
	if err != nil {
		t.Fatal(err)
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%s/cmdline", clusternodes.ParseInfo(info)["process_id"]))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(cmdline), token) {
		t.Fatalf("the password is on the server's command line: %q", cmdline)
	}
	if self, _ := os.ReadFile("/proc/self/cmdline"); strings.Contains(string(self), token) {
		t.Fatal("the password is on the wrapper's command line")
	}
}

// TestAuthFileWithoutPasswordRefusesToStart: an include of an auth file with an empty
// password would start a server open to anyone; the wrapper starts nothing.
func TestAuthFileWithoutPasswordRefusesToStart(t *testing.T) {
	dir := t.TempDir()
	logs := &syncBuffer{}
	w := &Wrapper{DataDir: dir, Addr: "127.0.0.1:1", AuthFile: filepath.Join(dir, "auth.conf"), Log: log.New(logs, "", 0)}
	if code := w.Run(context.Background(), []string{"/bin/false-never-run"}); code != 1 {
		t.Fatalf("exit code %d, want 1", code)
	}
	if !strings.Contains(logs.String(), "no password") {
		t.Fatalf("log does not say why: %q", logs.String())
	}
	if _, err := os.Stat(w.AuthFile); err == nil {
		t.Fatal("an auth file was written without a password")
	}
}

// strOnce runs one command on a new connection with the password ("" for none).
func strOnce(ctx context.Context, addr, password string, args ...string) (string, error) {
	s, err := dial(addr, "", password, time.Second, nil)
	if err != nil {
		return "", err
	}
	defer s.close()
	return s.str(ctx, args...)
}
