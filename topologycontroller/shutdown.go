package topologycontroller

import (
	"context"
	"fmt"
	"strings"
)

// handOverOnShutdown makes every server that can (Valkey 9 and later) hand its slots to
// an in-sync replica when it is stopped by SIGTERM: shutdown-on-sigterm gets the failover
// flag, next to the save or nosave flag the workload controller wrote in valkey.conf. A
// pod deleted or evicted outside a roll then costs clients a failover, not the node
// timeout. The flag is set at runtime, so a restarted server gets it again here; it never
// ends the round.
func (r *Reconciler) handOverOnShutdown(ctx context.Context, st *clusterState) (bool, error) {
	for _, m := range st.sortedMembers() {
		if !m.handsOverOnShutdown() {
			continue
		}
		cur, err := configGet(ctx, st.cs, m.addr, "shutdown-on-sigterm")
		if err != nil {
			return false, err
		}
		if strings.Contains(cur, "failover") {
			continue
		}
		want := strings.TrimSpace(cur + " failover")
		if err := st.cs.ok(ctx, m.addr, "CONFIG", "SET", "shutdown-on-sigterm", want); err != nil {
			return false, err
		}
	}
	return false, nil
}

// configGet reads one configuration parameter of the server at addr.
func configGet(ctx context.Context, cs *conns, addr, name string) (string, error) {
	r, err := cs.do(ctx, addr, "CONFIG", "GET", name)
	if err != nil {
		return "", err
	}
	kv, err := r.AsStrSlice()
	if err != nil {
		return "", fmt.Errorf("CONFIG GET %s on %s: %w", name, addr, err)
	}
	if len(kv) != 2 {
		return "", fmt.Errorf("CONFIG GET %s on %s: no such parameter", name, addr)
	}
	return kv[1], nil
}
