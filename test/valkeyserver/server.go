// Package valkeyserver starts real Valkey-protocol servers for tests. The server is, in this
// order: $VALKEY_SERVER (a path, or a name looked up on PATH: VALKEY_SERVER=redis-server forces
// Redis), the valkey-server that install.sh put in the cache (~/.cache/valkey-operator), or
// valkey-server or redis-server on PATH (Debian's Redis 7 speaks the same protocol and cluster
// bus). Each server listens on a loopback address only.
package valkeyserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

var chosen struct {
	once          sync.Once
	path, version string
	err           error
}

// Binary returns the server binary tests use. The first call logs it with its version to
// stderr (go test shows it with -v or when a test fails).
func Binary() (string, error) {
	chosen.once.Do(func() {
		chosen.path, chosen.err = find()
		if chosen.err == nil {
			chosen.version, chosen.err = version(chosen.path)
		}
		if chosen.err == nil {
			fmt.Fprintf(os.Stderr, "valkeyserver: %s (%s)\n", chosen.version, chosen.path)
		}
	})
	return chosen.path, chosen.err
}

// Version names the server binary tests use and its version, e.g. "valkey-server 9.1.2" or
// "redis-server 7.0.15".
func Version() (string, error) {
	_, err := Binary()
	return chosen.version, err
}

func find() (string, error) {
	if s := os.Getenv("VALKEY_SERVER"); s != "" {
		p, err := exec.LookPath(s)
		if err != nil {
			return "", fmt.Errorf("VALKEY_SERVER=%s: %w (make valkey installs valkey-server)", s, err)
		}
		return p, nil
	}
	if p := cached(); p != "" {
		return p, nil
	}
	for _, name := range []string{"valkey-server", "redis-server"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("no valkey-server (make valkey) and no redis-server on PATH (apt-get install redis-server)")
}

// cached returns the newest valkey-server that install.sh put in the cache, or "".
func cached() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	found, _ := filepath.Glob(filepath.Join(dir, "valkey-operator", "valkey-*", "bin", "valkey-server"))
	best, bestVersion := "", []int(nil)
	for _, p := range found {
		v := numbers(strings.TrimPrefix(filepath.Base(filepath.Dir(filepath.Dir(p))), "valkey-"))
		if v != nil && slices.Compare(v, bestVersion) > 0 {
			best, bestVersion = p, v
		}
	}
	return best
}

// numbers parses "9.1.2" as [9 1 2]; nil when it is not such a version.
func numbers(s string) []int {
	var v []int
	for _, f := range strings.Split(s, ".") {
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil
		}
		v = append(v, n)
	}
	return v
}

// version runs `bin --version`: "Valkey server v=9.1.2 sha=..." becomes "valkey-server 9.1.2".
func version(bin string) (string, error) {
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", bin, err)
	}
	f := strings.Fields(string(out))
	if len(f) < 3 || f[1] != "server" || !strings.HasPrefix(f[2], "v=") {
		return "", fmt.Errorf("%s --version: unexpected %q", bin, out)
	}
	return strings.ToLower(f[0]) + "-server " + strings.TrimPrefix(f[2], "v="), nil
}

// Options of a test server.
type Options struct {
	// Host is the loopback address to listen on (default 127.0.0.1; any 127.0.0.x works).
	Host string
	// Port to listen on; a free one when 0.
	Port int
	// Cluster enables cluster mode (nodes.conf in Dir).
	Cluster bool
	// Password sets requirepass and masterauth.
	Password string
	// Dir is the data directory; a new temporary one when empty.
	Dir string
	// Config holds extra directives, one "key value" line each.
	Config []string
	// ConfigFile is a config file the server loads first, as a pod loads its rendered
	// valkey.conf. The lines that follow it then set only where the server listens (Host,
	// Port, the bus port Port+10000, the announced IP) and its log file, as the pod's
	// command-line arguments do, then Password and Config: dir, persistence and cluster mode
	// come from the file, and Cluster is ignored.
	ConfigFile string
	// TLSDir, when set, holds tls.crt, tls.key and ca.crt: the server then serves TLS only
	// on Port (port 0, tls-port Port) and speaks TLS on replication and the cluster bus,
	// as a pod with spec.tls does. The server must be built with TLS (see SupportsTLS).
	TLSDir string
}

// Server is a running server.
type Server struct {
	Options
	cmd  *exec.Cmd
	done chan error
}

// Start starts a server and waits until it answers PING.
func Start(opts Options) (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	if opts.Host == "" {
		opts.Host = "127.0.0.1"
	}
	if !net.ParseIP(opts.Host).IsLoopback() {
		return nil, fmt.Errorf("test servers listen on loopback only, not %s", opts.Host)
	}
	if opts.Port == 0 {
		if opts.Port, err = FreePort(opts.Host); err != nil {
			return nil, err
		}
	}
	if opts.Dir == "" {
		if opts.Dir, err = os.MkdirTemp("", "valkey-test-"); err != nil {
			return nil, err
		}
	}
	var lines []string
	if opts.ConfigFile != "" {
		lines = []string{
			"include " + opts.ConfigFile,
			"bind " + opts.Host,
			"port " + strconv.Itoa(opts.Port),
			"cluster-port " + strconv.Itoa(opts.Port+10000),
			"cluster-announce-ip " + opts.Host,
			"logfile " + filepath.Join(opts.Dir, "server.log"),
		}
	} else {
		lines = []string{
			"bind " + opts.Host,
			"port " + strconv.Itoa(opts.Port),
			"dir " + opts.Dir,
			"daemonize no",
			"protected-mode no",
			"logfile " + filepath.Join(opts.Dir, "server.log"),
			`save ""`,
			"appendonly no",
		}
	}
	if opts.Cluster && opts.ConfigFile == "" {
		lines = append(lines,
			"cluster-enabled yes",
			"cluster-config-file "+filepath.Join(opts.Dir, "nodes.conf"),
			"cluster-node-timeout 3000",
			"cluster-announce-ip "+opts.Host,
		)
	}
	if opts.Password != "" {
		lines = append(lines, "requirepass "+opts.Password, "masterauth "+opts.Password)
	}
	lines = append(lines, tlsLines(opts)...)
	lines = append(lines, opts.Config...)
	conf := filepath.Join(opts.Dir, "test.conf")
	if err := os.WriteFile(conf, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		return nil, err
	}
	s := &Server{Options: opts, done: make(chan error, 1)}
	s.cmd = exec.Command(bin, conf)
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() { s.done <- s.cmd.Wait() }()
	if err := s.waitReady(10 * time.Second); err != nil {
		_ = s.Kill()
		log, _ := os.ReadFile(filepath.Join(opts.Dir, "server.log"))
		return nil, fmt.Errorf("%w; server log:\n%s", err, log)
	}
	return s, nil
}

// Addr is host:port.
func (s *Server) Addr() string { return net.JoinHostPort(s.Host, strconv.Itoa(s.Port)) }

func (s *Server) waitReady(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		select {
		case err := <-s.done:
			s.done <- err
			return fmt.Errorf("server on %s exited: %w", s.Addr(), err)
		default:
		}
		if c, err := s.dialProbe(); err == nil {
			_ = c.SetDeadline(time.Now().Add(time.Second))
			_, _ = c.Write([]byte("PING\r\n"))
			buf := make([]byte, 64)
			n, _ := c.Read(buf)
			_ = c.Close()
			// +PONG, or -NOAUTH when a password is set: both mean it serves.
			if n > 0 && (strings.HasPrefix(string(buf[:n]), "+PONG") || strings.HasPrefix(string(buf[:n]), "-NOAUTH")) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("server on %s did not answer PING within %s", s.Addr(), timeout)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Stop sends SIGTERM (the server saves if configured to) and waits for the exit.
func (s *Server) Stop() error { return s.signal(syscall.SIGTERM) }

// Kill stops the server at once with SIGKILL.
func (s *Server) Kill() error { return s.signal(syscall.SIGKILL) }

func (s *Server) signal(sig syscall.Signal) error {
	if s.cmd.Process == nil {
		return nil
	}
	_ = s.cmd.Process.Signal(sig)
	select {
	case err := <-s.done:
		s.done <- err // for a later Stop or Kill
		return nil
	case <-time.After(15 * time.Second):
		_ = s.cmd.Process.Kill()
		return fmt.Errorf("server on %s did not stop on %v", s.Addr(), sig)
	}
}

// Restart stops the server and starts it again with the same options, or with changes made
// by modify (a new Host to simulate a new pod IP, an empty Dir to simulate lost data).
func (s *Server) Restart(modify func(*Options)) (*Server, error) {
	if err := s.Stop(); err != nil {
		return nil, err
	}
	opts := s.Options
	if modify != nil {
		modify(&opts)
	}
	return Start(opts)
}

// FreePort returns a TCP port free on host whose cluster bus port (+10000) is free too.
func FreePort(host string) (int, error) {
	for i := 0; i < 50; i++ {
		l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if port+10000 > 65535 {
			continue
		}
		if b, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port+10000))); err == nil {
			_ = b.Close()
			return port, nil
		}
	}
	return 0, errors.New("no free port pair found")
}
