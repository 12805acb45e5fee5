package valkeystart

import (
	"context"
	"crypto/tls"
	"fmt"
	"time"

	"github.com/valkey-io/valkey-go"

	"valkey.io/operator/internal/clusternodes"
	"valkey.io/operator/internal/valkeydial"
)

// server is a connection to one Valkey server.
type server struct {
	addr string
	cl   valkey.Client
}

// dial connects to the server at addr (ip:port) as user ("" for the default user) with the
// password ("" for none), over TLS when tlsConfig is set.
func dial(addr, user, password string, timeout time.Duration, tlsConfig *tls.Config) (*server, error) {
	cl, err := valkeydial.Dial(valkeydial.Options{Addr: addr, User: user, Password: password,
		DialTimeout: timeout, WriteTimeout: timeout, TLS: tlsConfig})
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", addr, err)
	}
	return &server{addr: addr, cl: cl}, nil
}

func (s *server) close() { s.cl.Close() }

// str runs a command and returns its reply as a string.
func (s *server) str(ctx context.Context, args ...string) (string, error) {
	out, err := s.cl.Do(ctx, s.cl.B().Arbitrary(args...).Build()).ToString()
	if err != nil {
		return "", fmt.Errorf("%s on %s: %w", args[0], s.addr, err)
	}
	return out, nil
}

// nodes returns the server's CLUSTER NODES view.
func (s *server) nodes(ctx context.Context) ([]clusternodes.Node, error) {
	out, err := s.str(ctx, "CLUSTER", "NODES")
	if err != nil {
		return nil, err
	}
	return clusternodes.Parse(out)
}

// replication returns the server's INFO replication fields.
func (s *server) replication(ctx context.Context) (map[string]string, error) {
	out, err := s.str(ctx, "INFO", "replication")
	if err != nil {
		return nil, err
	}
	return clusternodes.ParseInfo(out), nil
}
