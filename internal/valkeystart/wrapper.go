// Package valkeystart is the start wrapper of the Valkey container (cmd/valkey-start): it
// prepares a data directory restored from a backup, fences a primary that crashed before
// its server starts again, hands a primary's slots to a replica before the server stops,
// and records whether the server stopped cleanly. See docs/contract.md, "Crash fencing and
// hand-over" and "Restore".
package valkeystart

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
)

// Files in the data directory.
const (
	// NodesFile is the server's cluster config (cluster-config-file).
	NodesFile = "nodes.conf"
	// MarkerFile exists while the data directory holds what a clean stop left: it is
	// written when the server exits 0 and removed before the server starts.
	MarkerFile = "valkey-start.clean"
)

// Wrapper runs one Valkey server.
type Wrapper struct {
	// DataDir holds nodes.conf, the data set and the clean-stop marker.
	DataDir string
	// Addr is the local server's client address (ip:port).
	Addr string
	// Password of the servers ("" for none): the password of User, or of the default user
	// when User is empty.
	Password string
	// User, when set, is the ACL user valkey-start authenticates as (the operator's own
	// user on a cluster node); the auth file then creates it, and makes it the replicas'
	// masteruser, instead of setting requirepass.
	User string
	// ACLFile, when set with User, holds the cluster's other users (config "user" lines),
	// copied into the auth file.
	ACLFile string
	// AuthFile, when set, is written with the password (requirepass, masterauth) before
	// the server starts; the server's config includes it.
	AuthFile string
	// TLS, when set, is how the servers are reached (spec.tls): the chain is verified
	// against the cluster's CA, not the name (the local server is dialed at 127.0.0.1).
	TLS *tls.Config
	// Durable: the server keeps its data set on disk (RDB or AOF), so a clean stop leaves
	// it whole and the server may start on it as a primary.
	Durable bool
	// DialTimeout bounds each connection and command.
	DialTimeout time.Duration
	// FailoverTimeout bounds each attempt to promote a replica before a start.
	FailoverTimeout time.Duration
	// ReplicaWait bounds how long a crashed primary waits, before it starts on its own data,
	// for a replica of it that may hold newer data to answer in sync (see fence).
	ReplicaWait time.Duration
	// HandOverTimeout bounds the hand-over to a replica when the server is stopped.
	HandOverTimeout time.Duration
	// Log receives what the wrapper decides (stderr when nil).
	Log *log.Logger
	// Signals, when set, replaces the process's own SIGTERM, SIGINT, SIGHUP and SIGQUIT.
	Signals <-chan os.Signal
	// RestoreID, when set, is the backup the data directory was restored from: see Restore.
	RestoreID string
	// RestoreIdentity is IdentityKeep or IdentityFresh (with RestoreID).
	RestoreIdentity string

	// MetricsAddr, when set, is where /metrics is served: the data directory's usage and
	// the server's persistence state (see serveMetrics).
	MetricsAddr string
	// ServerMetrics adds the server's own figures to /metrics, read as the metrics user
	// (acl.MetricsUser, whose password derives from Password): only with User set.
	ServerMetrics bool

	// aofDamaged is raised by the server's output when it logs an AOF error (see watchAOF).
	aofDamaged atomic.Bool
	// persistence is what the server last said of its saves (nil while it does not answer).
	persistence atomic.Pointer[persistenceState]
}

// Run fences, starts the server (argv), relays signals to it with a hand-over before
// SIGTERM, and returns the exit code for the container: the server's, or 1 when it could
// not be started safely.
func (w *Wrapper) Run(ctx context.Context, argv []string) int {
	if _, err := Restore(w.DataDir, w.RestoreID, w.RestoreIdentity, w.logf); err != nil {
		w.logf("%v", err)
		return 1
	}
	// After the restore: whether the server starts with a new node ID (HoldsReplication) is
	// known only once the restore has kept or removed nodes.conf.
	if err := w.writeAuthFile(BinaryMajor(argv[0])); err != nil {
		w.logf("%v", err)
		return 1
	}
	if err := w.fence(ctx); err != nil {
		w.logf("%v", err)
		return 1
	}
	if err := os.Remove(w.markerPath()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		w.logf("remove %s: %v", MarkerFile, err)
		return 1
	}
	// The server outlives ctx: a SIGTERM is relayed to it (relay) so that it shuts down
	// cleanly, never killed when ctx ends.
	cmd := exec.CommandContext(context.WithoutCancel(ctx), argv[0], argv[1:]...) //nolint:gosec // G204: argv is the container's own command line
	cmd.Stdin = os.Stdin
	cmd.Stdout = &aofLog{out: os.Stdout, damaged: &w.aofDamaged}
	cmd.Stderr = &aofLog{out: os.Stderr, damaged: &w.aofDamaged}
	signals := w.Signals
	if signals == nil {
		own := make(chan os.Signal, 4)
		signal.Notify(own, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT)
		defer signal.Stop(own)
		signals = own
	}
	if err := cmd.Start(); err != nil {
		w.logf("start %s: %v", argv[0], err)
		return 1
	}
	done := make(chan struct{})
	go w.relay(ctx, cmd.Process, signals, done)
	go w.watchAOF(ctx, done)
	go w.serveMetrics(ctx, done)
	err := cmd.Wait()
	close(done)
	return w.exited(err)
}

// relay passes signals to the server; SIGTERM after a hand-over.
func (w *Wrapper) relay(ctx context.Context, p *os.Process, signals <-chan os.Signal, done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		case sig := <-signals:
			if sig == syscall.SIGTERM {
				w.handOver(ctx)
			}
			_ = p.Signal(sig)
		}
	}
}

// exited records a clean stop and returns the container's exit code.
func (w *Wrapper) exited(err error) int {
	var exit *exec.ExitError
	switch {
	case err == nil:
		if werr := os.WriteFile(w.markerPath(), []byte(time.Now().UTC().Format(time.RFC3339)+"\n"), 0o600); werr != nil {
			w.logf("write %s: %v", MarkerFile, werr)
		}
		w.logf("the server stopped cleanly")
		return 0
	case errors.As(err, &exit):
		w.logf("the server exited: %v", err)
		if st, ok := exit.Sys().(syscall.WaitStatus); ok && st.Signaled() {
			return 128 + int(st.Signal())
		}
		return exit.ExitCode()
	default:
		w.logf("wait for the server: %v", err)
		return 1
	}
}

// waitRole polls the server's role until it is role or the timeout passes.
func (w *Wrapper) waitRole(ctx context.Context, s *server, role string, timeout time.Duration) bool {
	return w.poll(ctx, timeout, func(info map[string]string) bool { return info["role"] == role }, s)
}

// poll reads the server's INFO replication every 100 ms until done holds or the timeout
// passes.
func (w *Wrapper) poll(ctx context.Context, timeout time.Duration, done func(map[string]string) bool, s *server) bool {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if info, err := s.replication(ctx); err == nil && done(info) {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
}

// waitOffset polls a replica until its replication offset reaches target or the timeout passes.
func (w *Wrapper) waitOffset(ctx context.Context, s *server, target int64, timeout time.Duration) bool {
	return w.poll(ctx, timeout, func(info map[string]string) bool {
		offset, err := strconv.ParseInt(info["slave_repl_offset"], 10, 64)
		return err == nil && offset >= target
	}, s)
}

func (w *Wrapper) logf(format string, args ...any) {
	l := w.Log
	if l == nil {
		l = log.New(os.Stderr, "valkey-start: ", log.LstdFlags)
	}
	_ = l.Output(2, fmt.Sprintf(format, args...)) // logging is best effort
}
