package serverwatch

import (
	"context"
	"hash/fnv"
	"io"
	"slices"
	"strings"
	"time"

	"valkey.io/operator/topologycontroller/round"
)

// digestOf is a short hash of what the cluster's servers show: the servers asked before
// one answered (they stopped answering), then that server's CLUSTER NODES as a set of
// lines reduced to what a status follows (see lineFacts). 0 when none answered. A server
// that has not answered within timeout is passed over.
func digestOf(ctx context.Context, cs *round.Conns, addrs []string, timeout time.Duration) uint64 {
	h := fnv.New64a()
	for _, addr := range addrs {
		out, err := askNodes(ctx, cs, addr, timeout)
		if err != nil {
			_, _ = io.WriteString(h, "silent "+addr+"\n")
			continue
		}
		_, _ = io.WriteString(h, "view of "+addr+"\n")
		for _, l := range viewFacts(out) {
			_, _ = io.WriteString(h, l+"\n")
		}
		return h.Sum64()
	}
	return 0
}

// askNodes is the server's CLUSTER NODES, within timeout.
func askNodes(ctx context.Context, cs *round.Conns, addr string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return cs.Str(ctx, addr, "CLUSTER", "NODES")
}

// viewFacts are a CLUSTER NODES reply's lines reduced by lineFacts, sorted.
func viewFacts(out string) []string {
	var lines []string
	for _, line := range strings.Split(out, "\n") {
		if f := lineFacts(line); f != "" {
			lines = append(lines, f)
		}
	}
	slices.Sort(lines)
	return lines
}

// lineFacts is one line of CLUSTER NODES without what changes on its own (the ping and
// pong times): ID, address, flags, primary, config epoch, link state and slots. "" for a
// line that is no node's.
func lineFacts(line string) string {
	f := strings.Fields(line)
	if len(f) < 8 {
		return ""
	}
	return strings.Join(append(f[:4:4], f[6:]...), " ")
}
