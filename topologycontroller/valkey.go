package topologycontroller

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/valkey-io/valkey-go"

	"valkey.io/operator/internal/clusternodes"
	"valkey.io/operator/internal/valkeydial"
)

// commandsSent counts the commands sent to Valkey servers by every reconcile of the
// process (what the topology benchmark reports per reconcile and per node).
var commandsSent atomic.Int64

// conns holds the per-node clients of one reconcile. It is closed at the end of the
// reconcile: nothing of it outlives a reconcile, so a restarted controller loses nothing.
type conns struct {
	creds       credentials
	dialTimeout time.Duration
	cmdTimeout  time.Duration
	clients     map[string]valkey.Client
	// tls: servers speak TLS with certificates of this cluster's CA (see conns_tls.go).
	tls *connsTLS
	// fellBack are the servers that refused the operator's user and accepted the default
	// user's password (servers started before the operator had its own user).
	fellBack map[string]bool
}

// credentials: the operator's own user and its password, and the default user's password
// for servers that do not know that user yet ("" for none).
type credentials struct {
	user, password, defaultPassword string
}

func newConns(creds credentials, dialTimeout, cmdTimeout time.Duration) *conns {
	return &conns{creds: creds, dialTimeout: dialTimeout, cmdTimeout: cmdTimeout,
		clients: map[string]valkey.Client{}, fellBack: map[string]bool{}}
}

// get returns a client of the server at addr (ip:port), dialing it on first use: as the
// operator's user, or, when the server refuses it, as the default user with its password.
func (c *conns) get(addr string) (valkey.Client, error) {
	if cl, ok := c.clients[addr]; ok {
		return cl, nil
	}
	cl, err := c.dial(addr, c.creds.user, c.creds.password)
	if err != nil && c.creds.user != "" && c.creds.defaultPassword != "" && isAuthError(err) {
		if fb, fbErr := c.dial(addr, "", c.creds.defaultPassword); fbErr == nil {
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
func (c *conns) dial(addr, user, password string) (valkey.Client, error) {
	return valkeydial.Dial(valkeydial.Options{Addr: addr, User: user, Password: password,
		DialTimeout: c.dialTimeout, WriteTimeout: c.cmdTimeout, TLS: c.tls.config(addr), Small: true})
}

// migrateAuth are MIGRATE's arguments authenticating on the target server at addr, as
// this reconcile does.
func (c *conns) migrateAuth(addr string) []string {
	switch {
	case c.fellBack[addr]:
		return []string{"AUTH", c.creds.defaultPassword}
	case c.creds.user != "":
		return []string{"AUTH2", c.creds.user, c.creds.password}
	case c.creds.password != "":
		return []string{"AUTH", c.creds.password}
	}
	return nil
}

// close closes every client.
func (c *conns) close() {
	for _, cl := range c.clients {
		cl.Close()
	}
	c.clients = map[string]valkey.Client{}
}

// do runs one command on the server at addr.
func (c *conns) do(ctx context.Context, addr string, args ...string) (valkey.ValkeyResult, error) {
	cl, err := c.get(addr)
	if err != nil {
		return valkey.ValkeyResult{}, err
	}
	commandsSent.Add(1)
	return cl.Do(ctx, cl.B().Arbitrary(args...).Build()), nil
}

// multi pipelines commands to the server at addr and returns their replies; err is the
// first failure (a reply error included).
func (c *conns) multi(ctx context.Context, addr string, cmds [][]string) ([]valkey.ValkeyResult, error) {
	if len(cmds) == 0 {
		return nil, nil
	}
	cl, err := c.get(addr)
	if err != nil {
		return nil, err
	}
	built := make(valkey.Commands, 0, len(cmds))
	for _, args := range cmds {
		built = append(built, cl.B().Arbitrary(args...).Build())
	}
	commandsSent.Add(int64(len(built)))
	res := cl.DoMulti(ctx, built...)
	for i, r := range res {
		if err := r.Error(); err != nil {
			return res, fmt.Errorf("%s on %s: %w", strings.Join(redactArgs(cmds[i]), " "), addr, err)
		}
	}
	return res, nil
}

// dedicated runs fn on a connection to the server at addr that nobody else uses meanwhile
// (WATCH holds on its connection).
func (c *conns) dedicated(addr string, fn func(valkey.DedicatedClient) error) error {
	cl, err := c.get(addr)
	if err != nil {
		return err
	}
	return cl.Dedicated(fn)
}

// str runs a command and returns its reply as a string.
func (c *conns) str(ctx context.Context, addr string, args ...string) (string, error) {
	r, err := c.do(ctx, addr, args...)
	if err != nil {
		return "", err
	}
	s, err := r.ToString()
	if err != nil {
		return "", fmt.Errorf("%s on %s: %w", strings.Join(redactArgs(args), " "), addr, err)
	}
	return s, nil
}

// ok runs a command whose reply does not matter.
func (c *conns) ok(ctx context.Context, addr string, args ...string) error {
	r, err := c.do(ctx, addr, args...)
	if err != nil {
		return err
	}
	if err := r.Error(); err != nil {
		return fmt.Errorf("%s on %s: %w", strings.Join(redactArgs(args), " "), addr, err)
	}
	return nil
}

// countKeys is CLUSTER COUNTKEYSINSLOT of each slot on the server at addr, pipelined. Slots
// without keys are left out.
func countKeys(ctx context.Context, cs *conns, addr string, slots []int) (map[int]int64, error) {
	cmds := make([][]string, len(slots))
	for i, slot := range slots {
		cmds[i] = []string{"CLUSTER", "COUNTKEYSINSLOT", strconv.Itoa(slot)}
	}
	res, err := cs.multi(ctx, addr, cmds)
	if err != nil {
		return nil, err
	}
	out := make(map[int]int64, len(slots))
	for i, slot := range slots {
		n, err := res[i].AsInt64()
		if err != nil {
			return nil, fmt.Errorf("CLUSTER COUNTKEYSINSLOT %d on %s: %w", slot, addr, err)
		}
		if n > 0 {
			out[slot] = n
		}
	}
	return out, nil
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

// clusterNode is one line of CLUSTER NODES.
type clusterNode = clusternodes.Node

// parseClusterNodes parses the output of CLUSTER NODES.
func parseClusterNodes(out string) ([]clusterNode, error) { return clusternodes.Parse(out) }

// parseInfo parses INFO output into key → value.
func parseInfo(out string) map[string]string { return clusternodes.ParseInfo(out) }

// replicationOffset is the replication offset a replica has processed (for choosing the
// most up-to-date replica to fail over to).
func replicationOffset(info map[string]string) int64 {
	for _, k := range []string{"slave_repl_offset", "master_repl_offset"} {
		if v, ok := info[k]; ok {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				return n
			}
		}
	}
	return -1
}
