package valkeyconf

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"valkey.io/operator/test/valkeyserver"
)

// server is valkey-server (or redis-server) started on a rendered config the way the pod
// starts it: the config file, then command-line arguments (here the loopback address and
// free ports instead of the pod IP and the fixed ports).
type server struct {
	t    *testing.T
	cmd  *exec.Cmd
	out  *strings.Builder
	port int
	done chan error
}

func startServer(t *testing.T, conf, dir string, port int) *server {
	t.Helper()
	bin, err := valkeyserver.Binary()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "valkey.conf")
	if err := os.WriteFile(file, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	if port == 0 {
		if port, err = valkeyserver.FreePort("127.0.0.1"); err != nil {
			t.Fatal(err)
		}
	}
	s := &server{t: t, port: port, out: &strings.Builder{}, done: make(chan error, 1)}
	s.cmd = exec.Command(bin, file, "--port", strconv.Itoa(port), "--cluster-port", strconv.Itoa(port+10000),
		"--bind", "127.0.0.1", "--cluster-announce-ip", "127.0.0.1")
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.done <- s.cmd.Wait() }()
	t.Cleanup(s.kill)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if reply, err := s.try("PING"); err == nil && reply[0] == "PONG" {
			return s
		}
		select {
		case err := <-s.done:
			s.done <- err
			t.Fatalf("server exited: %v\n%s", err, s.out)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("server on port %d does not answer\n%s", port, s.out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *server) kill() {
	select {
	case err := <-s.done:
		s.done <- err
	default:
		_ = s.cmd.Process.Kill()
		s.done <- <-s.done
	}
}

// stop sends SIGTERM, as the kubelet does, and waits for the exit.
func (s *server) stop() {
	s.t.Helper()
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.done:
		s.done <- err
	case <-time.After(15 * time.Second):
		s.t.Fatalf("server did not stop on SIGTERM\n%s", s.out)
	}
}

func (s *server) do(args ...string) []string {
	s.t.Helper()
	reply, err := s.try(args...)
	if err != nil {
		s.t.Fatalf("%v: %v", args, err)
	}
	return reply
}

// try sends one command on a new connection and returns the reply flattened to strings.
func (s *server) try(args ...string) ([]string, error) {
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)), time.Second)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := io.WriteString(c, b.String()); err != nil {
		return nil, err
	}
	return readReply(bufio.NewReader(c))
}

func readReply(r *bufio.Reader) ([]string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return nil, fmt.Errorf("empty reply line")
	}
	switch line[0] {
	case '+', ':':
		return []string{line[1:]}, nil
	case '-':
		return nil, fmt.Errorf("error reply: %s", line[1:])
	case '$':
		n, _ := strconv.Atoi(line[1:])
		if n < 0 {
			return []string{""}, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		return []string{string(buf[:n])}, nil
	case '*':
		n, _ := strconv.Atoi(line[1:])
		var out []string
		for i := 0; i < n; i++ {
			item, err := readReply(r)
			if err != nil {
				return nil, err
			}
			out = append(out, item...)
		}
		return out, nil
	}
	return nil, fmt.Errorf("unexpected reply %q", line)
}

// info returns the fields of an INFO section.
func (s *server) info(section string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(s.do("INFO", section)[0], "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = v
		}
	}
	return out
}

func clusterOK(s *server) bool {
	r, err := s.try("CLUSTER", "INFO")
	return err == nil && strings.Contains(r[0], "cluster_state:ok")
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestRenderedConfigInRealServer loads rendered configs into the real server: hostile but
// accepted values stay one value, owned settings hold, and with persistence the server
// snapshots on SIGTERM (without persistence it does not).
func TestRenderedConfigInRealServer(t *testing.T) {
	hostile := map[string]string{
		"syslog-ident":        `x" dir "/tmp`,
		"proc-title-template": `{title} \" \\x0a dir /tmp '`,
		"repl-backlog-size":   "32mb",
	}
	for _, persist := range []bool{true, false} {
		t.Run(fmt.Sprintf("persistence=%v", persist), func(t *testing.T) {
			dir := t.TempDir()
			conf, err := Render(Params{DataDir: dir, Persistence: persist, RDB: true, Config: hostile})
			if err != nil {
				t.Fatal(err)
			}
			s := startServer(t, conf, dir, 0)
			wantSave := ""
			if persist {
				wantSave = "3600 1 300 100 60 10000"
			}
			want := map[string]string{
				"dir": dir, "cluster-enabled": "yes", "cluster-config-file": dir + "/nodes.conf",
				"save": wantSave, "appendonly": "no", "repl-backlog-size": "33554432", "protected-mode": "no",
				"syslog-ident": hostile["syslog-ident"], "proc-title-template": hostile["proc-title-template"],
			}
			for k, v := range want {
				if got := s.do("CONFIG", "GET", k); len(got) != 2 || got[1] != v {
					t.Errorf("CONFIG GET %s = %q, want %q", k, got, v)
				}
			}
			s.do("CLUSTER", "ADDSLOTSRANGE", "0", "16383")
			waitFor(t, "cluster_state:ok", func() bool { return s.info("cluster")["cluster_enabled"] == "1" && clusterOK(s) })
			s.do("SET", "k", "v")
			s.stop()
			_, err = os.Stat(filepath.Join(dir, "dump.rdb"))
			if persist && err != nil {
				t.Errorf("no dump.rdb after SIGTERM with persistence: %v", err)
			}
			if !persist && err == nil {
				t.Errorf("dump.rdb written without persistence")
			}
		})
	}
}

// TestRestartedReplicaResyncsPartially runs a primary and a replica on rendered persistence
// configs, restarts the replica with SIGTERM while the primary takes writes, and checks that
// it comes back with a partial resync (no full copy) and the writes it missed. That needs
// the snapshot on SIGTERM: without it the replica would restart from its first sync's RDB,
// whose offset the backlog no longer covers.
func TestRestartedReplicaResyncsPartially(t *testing.T) {
	primaryDir, replicaDir := t.TempDir(), t.TempDir()
	render := func(dir string) string {
		// A small backlog, so that only the offset saved on SIGTERM (not the one of the
		// initial sync, which the replica's first RDB carries) is still covered by it.
		conf, err := Render(Params{DataDir: dir, Persistence: true, RDB: true,
			Config: map[string]string{"repl-backlog-size": "1mb"}})
		if err != nil {
			t.Fatal(err)
		}
		return conf
	}
	primary := startServer(t, render(primaryDir), primaryDir, 0)
	replica := startServer(t, render(replicaDir), replicaDir, 0)
	primary.do("CLUSTER", "ADDSLOTSRANGE", "0", "16383")
	primaryID := primary.do("CLUSTER", "MYID")[0]
	replica.do("CLUSTER", "MEET", "127.0.0.1", strconv.Itoa(primary.port))
	waitFor(t, "the replica to know the primary", func() bool {
		nodes, err := replica.try("CLUSTER", "NODES")
		return err == nil && strings.Contains(nodes[0], primaryID)
	})
	replica.do("CLUSTER", "REPLICATE", primaryID)
	linkUp := func() bool {
		r, err := replica.try("INFO", "replication")
		return err == nil && strings.Contains(r[0], "master_link_status:up")
	}
	waitFor(t, "the replication link", linkUp)
	big := strings.Repeat("x", 10000)
	for i := 0; i < 200; i++ { // 2MB: more than the backlog
		primary.do("SET", fmt.Sprintf("before-%d", i), big)
	}
	waitFor(t, "the replica to catch up", func() bool {
		return replica.info("replication")["slave_repl_offset"] == primary.info("replication")["master_repl_offset"]
	})
	fullBefore := primary.info("stats")["sync_full"]

	replica.stop()
	for i := 0; i < 100; i++ {
		primary.do("SET", fmt.Sprintf("during-%d", i), "v")
	}
	replica = startServer(t, render(replicaDir), replicaDir, replica.port)
	waitFor(t, "the replication link after the restart", linkUp)
	stats := primary.info("stats")
	if stats["sync_full"] != fullBefore {
		t.Errorf("sync_full went from %s to %s: the restarted replica was fully resynced", fullBefore, stats["sync_full"])
	}
	if stats["sync_partial_ok"] != "1" {
		t.Errorf("sync_partial_ok = %s, want 1", stats["sync_partial_ok"])
	}
	waitFor(t, "the missed writes on the replica", func() bool {
		return strings.HasPrefix(replica.info("keyspace")["db0"], "keys=300,")
	})
}
