package valkeyserver

import (
	"crypto/tls"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// SupportsTLS tells whether the server binary was built with TLS, and if not, why: a
// server asked to listen for TLS without certificate files says "No tls-key-file" when it
// has TLS, and that it has no TLS support otherwise.
func SupportsTLS() (bool, string) {
	bin, err := Binary()
	if err != nil {
		return false, err.Error()
	}
	port, err := FreePort("127.0.0.1")
	if err != nil {
		return false, err.Error()
	}
	out, _ := exec.Command(bin, "--port", "0", "--bind", "127.0.0.1", "--tls-port", strconv.Itoa(port),
		"--tls-cert-file", "/nonexistent").CombinedOutput()
	if strings.Contains(string(out), "tls-key-file") {
		return true, ""
	}
	return false, bin + " was built without TLS support (set VALKEY_SERVER to a server with TLS, such as Debian's redis-server)"
}

// tlsLines are the directives of a TLS server (none without TLSDir).
func tlsLines(opts Options) []string {
	if opts.TLSDir == "" {
		return nil
	}
	return []string{
		"port 0",
		"tls-port " + strconv.Itoa(opts.Port),
		"tls-cert-file " + filepath.Join(opts.TLSDir, "tls.crt"),
		"tls-key-file " + filepath.Join(opts.TLSDir, "tls.key"),
		"tls-ca-cert-file " + filepath.Join(opts.TLSDir, "ca.crt"),
		"tls-replication yes",
		"tls-cluster yes",
		"tls-auth-clients no",
	}
}

// dialProbe connects to the server for the readiness check: over TLS (without verifying:
// it only tells that the server answers) when it serves TLS.
func (s *Server) dialProbe() (net.Conn, error) {
	d := &net.Dialer{Timeout: 200 * time.Millisecond}
	if s.TLSDir == "" {
		return d.Dial("tcp", s.Addr())
	}
	return tls.DialWithDialer(d, "tcp", s.Addr(), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // a readiness check only
}
