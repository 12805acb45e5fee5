// Package valkeydial is the one way the operator connects to a Valkey server: a single
// connection to one address (no cluster routing, no retries, no client-side cache), RESP2,
// no CLIENT SETINFO. The topology controller and valkey-start both dial through it.
package valkeydial

import (
	"crypto/tls"
	"net"
	"time"

	"github.com/valkey-io/valkey-go"
)

// Per-connection sizes of a small client (Options.Small). valkey-go's defaults (0.5 MiB
// read and write buffers and a ring of 1,024 slots per connection, about 1.5 MiB) would make
// a reconcile that holds a client of every member of a 300-node cluster cost 450 MiB.
// Replies larger than the read buffer (CLUSTER NODES of a big cluster) are still read whole.
const (
	smallReadBuffer  = 16 << 10
	smallWriteBuffer = 8 << 10
	smallRingScale   = 6 // 64 commands in flight; a longer pipeline waits for room
)

// Options say where and how to connect.
type Options struct {
	// Addr is the server's ip:port.
	Addr string
	// User ("" for the default user) and Password ("" for none).
	User, Password string
	// DialTimeout bounds connecting; WriteTimeout bounds writing one command.
	DialTimeout, WriteTimeout time.Duration
	// TLS, when set, makes the connection speak TLS.
	TLS *tls.Config
	// Small sizes the connection's buffers for a caller that holds many at once.
	Small bool
}

// Dial connects to one server.
func Dial(o Options) (valkey.Client, error) {
	opt := valkey.ClientOption{
		InitAddress:       []string{o.Addr},
		Username:          o.User,
		Password:          o.Password,
		ForceSingleClient: true,
		DisableCache:      true,
		DisableRetry:      true,
		// RESP2: CLUSTER NODES and INFO come back as plain strings, not RESP3 verbatim
		// strings with their "txt:" prefix.
		AlwaysRESP2: true,
		// No CLIENT SETINFO at connect: the operator's user is not granted it, and each
		// refusal would be logged in the server's ACL LOG.
		ClientSetInfo:    valkey.DisableClientSetInfo,
		Dialer:           net.Dialer{Timeout: o.DialTimeout},
		ConnWriteTimeout: o.WriteTimeout,
		TLSConfig:        o.TLS,
	}
	if o.Small {
		opt.ReadBufferEachConn, opt.WriteBufferEachConn, opt.RingScaleEachConn = smallReadBuffer, smallWriteBuffer, smallRingScale
	}
	return valkey.NewClient(opt)
}
