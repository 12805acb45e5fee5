package round

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/valkey-io/valkey-go"

	"valkey.io/operator/internal/valkeydial"
)

// CommandsSent counts the commands sent to Valkey servers by every reconcile of the
// process (what the topology benchmark reports per reconcile and per node).
var CommandsSent atomic.Int64

// Conns holds the per-node clients of one reconcile. It is closed at the end of the
// reconcile: nothing of it outlives a reconcile, so a restarted controller loses nothing.
type Conns struct {
	creds       Credentials
	dialTimeout time.Duration
	cmdTimeout  time.Duration
	clients     map[string]valkey.Client
	// tls: servers speak TLS with certificates of this cluster's CA (see conns_tls.go).
	tls *connsTLS
	// sent counts the commands sent (CommandsSent unless CountIn said otherwise).
	sent *atomic.Int64
	// fellBack are the servers that refused the operator's user and accepted the default
	// user's password (servers started before the operator had its own user).
	fellBack map[string]bool
}

// Credentials are the operator's own user and its password, and the default user's password
// for servers that do not know that user yet ("" for none).
type Credentials struct {
	User, Password, DefaultPassword string
}

// NewConns is an empty set of clients that dials as creds, within dialTimeout, and gives
// each command cmdTimeout.
func NewConns(creds Credentials, dialTimeout, cmdTimeout time.Duration) *Conns {
	return &Conns{creds: creds, dialTimeout: dialTimeout, cmdTimeout: cmdTimeout,
		clients: map[string]valkey.Client{}, fellBack: map[string]bool{}, sent: &CommandsSent}
}

// CountIn counts the commands c sends in sent instead of CommandsSent (the commands of
// something that is no reconcile, such as the server watcher).
func (c *Conns) CountIn(sent *atomic.Int64) { c.sent = sent }

// Get returns a client of the server at addr (ip:port), dialing it on first use: as the
// operator's user, or, when the server refuses it, as the default user with its password.
// Both go to addr, so addr must be tied to the node's own pod: a member's address is its
// status.workload.podIP, which the workload controller takes only from a pod the node's
// workload made (by ownership, never from a pod that merely carries the node's labels).
func (c *Conns) Get(addr string) (valkey.Client, error) {
	if cl, ok := c.clients[addr]; ok {
		return cl, nil
	}
	cl, err := c.dial(addr, c.creds.User, c.creds.Password)
	if err != nil && c.creds.User != "" && c.creds.DefaultPassword != "" && IsAuthError(err) {
		if fb, fbErr := c.dial(addr, "", c.creds.DefaultPassword); fbErr == nil {
			cl, err = fb, nil
			c.fellBack[addr] = true
		}
	}
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", addr, err)
	}
	c.clients[addr] = cl
	return cl, nil
}

// dial connects to the server at addr as user ("" for the default user).
func (c *Conns) dial(addr, user, password string) (valkey.Client, error) {
	return valkeydial.Dial(valkeydial.Options{Addr: addr, User: user, Password: password,
		DialTimeout: c.dialTimeout, WriteTimeout: c.cmdTimeout, TLS: c.tls.config(addr), Small: true})
}

// MigrateAuth are MIGRATE's arguments authenticating on the target server at addr, as
// this reconcile does.
func (c *Conns) MigrateAuth(addr string) []string {
	switch {
	case c.fellBack[addr]:
		return []string{"AUTH", c.creds.DefaultPassword}
	case c.creds.User != "":
		return []string{"AUTH2", c.creds.User, c.creds.Password}
	case c.creds.Password != "":
		return []string{"AUTH", c.creds.Password}
	}
	return nil
}

// Close closes every client.
func (c *Conns) Close() {
	for _, cl := range c.clients {
		cl.Close()
	}
	c.clients = map[string]valkey.Client{}
}

// Do runs one command on the server at addr.
func (c *Conns) Do(ctx context.Context, addr string, args ...string) (valkey.ValkeyResult, error) {
	cl, err := c.Get(addr)
	if err != nil {
		return valkey.ValkeyResult{}, err
	}
	c.sent.Add(1)
	return cl.Do(ctx, cl.B().Arbitrary(args...).Build()), nil
}

// Multi pipelines commands to the server at addr and returns their replies; err is the
// first failure (a reply error included).
func (c *Conns) Multi(ctx context.Context, addr string, cmds [][]string) ([]valkey.ValkeyResult, error) {
	if len(cmds) == 0 {
		return nil, nil
	}
	cl, err := c.Get(addr)
	if err != nil {
		return nil, err
	}
	built := make(valkey.Commands, 0, len(cmds))
	for _, args := range cmds {
		built = append(built, cl.B().Arbitrary(args...).Build())
	}
	c.sent.Add(int64(len(built)))
	res := cl.DoMulti(ctx, built...)
	return res, firstError(addr, cmds, res)
}

// firstError is the first failure among the replies res of cmds sent to addr (a reply
// error included), nil when none failed.
func firstError(addr string, cmds [][]string, res []valkey.ValkeyResult) error {
	for i, r := range res {
		if err := r.Error(); err != nil {
			return fmt.Errorf("%s on %s: %w", strings.Join(redactArgs(cmds[i]), " "), addr, err)
		}
	}
	return nil
}

// Dedicated runs fn on a connection to the server at addr that nobody else uses meanwhile
// (WATCH holds on its connection).
func (c *Conns) Dedicated(addr string, fn func(valkey.DedicatedClient) error) error {
	cl, err := c.Get(addr)
	if err != nil {
		return err
	}
	return cl.Dedicated(fn)
}

// Str runs a command and returns its reply as a string.
func (c *Conns) Str(ctx context.Context, addr string, args ...string) (string, error) {
	r, err := c.Do(ctx, addr, args...)
	if err != nil {
		return "", err
	}
	s, err := r.ToString()
	if err != nil {
		return "", fmt.Errorf("%s on %s: %w", strings.Join(redactArgs(args), " "), addr, err)
	}
	return s, nil
}

// OK runs a command whose reply does not matter.
func (c *Conns) OK(ctx context.Context, addr string, args ...string) error {
	r, err := c.Do(ctx, addr, args...)
	if err != nil {
		return err
	}
	if err := r.Error(); err != nil {
		return fmt.Errorf("%s on %s: %w", strings.Join(redactArgs(args), " "), addr, err)
	}
	return nil
}

// Meet has the server at on meet the node at addr (CLUSTER MEET). A MEET to a node the
// server already knows is no new membership: it opens one more link whose first packet
// carries the server's current slots and epoch, which the peer takes at once instead of at
// the next gossip.
func (c *Conns) Meet(ctx context.Context, on, addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	return c.OK(ctx, on, "CLUSTER", "MEET", host, port)
}

// redactArgs hides passwords in error messages: MIGRATE ... AUTH <password> or AUTH2
// <user> <password>, and the hashes of ACL SETUSER.
func redactArgs(args []string) []string {
	out := append([]string(nil), args...)
	for i := range out {
		switch {
		case strings.EqualFold(out[i], "AUTH") && i+1 < len(out):
			out[i+1] = "***"
		case strings.EqualFold(out[i], "AUTH2") && i+2 < len(out):
			out[i+2] = "***"
		case strings.HasPrefix(out[i], "#") || strings.HasPrefix(out[i], ">"):
			out[i] = out[i][:1] + "***"
		}
	}
	return out
}

// ReplicationOffset is the replication offset a replica has processed (for choosing the
// most up-to-date replica to fail over to).
func ReplicationOffset(info map[string]string) int64 {
	for _, k := range []string{"slave_repl_offset", "master_repl_offset"} {
		if v, ok := info[k]; ok {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				return n
			}
		}
	}
	return -1
}

// IsAuthError tells a refused password from an unreachable server.
func IsAuthError(err error) bool {
	s := err.Error()
	return strings.Contains(s, "WRONGPASS") || strings.Contains(s, "NOAUTH") ||
		strings.Contains(s, "without any password configured") || strings.Contains(s, "invalid password")
}
