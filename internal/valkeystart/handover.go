package valkeystart

import (
	"context"
	"strconv"
	"strings"

	"valkey.io/operator/internal/clusternodes"
)

// handOver runs when the server is asked to stop (SIGTERM: pod deletion, eviction, drain,
// roll). A primary that owns slots first hands them to its most up-to-date online replica
// with a graceful CLUSTER FAILOVER (the replica catches up with writes paused, then takes
// over), so no acknowledged write is lost and clients wait a failover, not the node timeout.
// It gives up after HandOverTimeout; the server is stopped either way.
func (w *Wrapper) handOver(ctx context.Context) {
	local, err := dial(w.Addr, w.User, w.Password, w.DialTimeout, w.TLS)
	if err != nil {
		w.logf("hand-over: %v", err)
		return
	}
	defer local.close()
	info, err := local.replication(ctx)
	if err != nil || info["role"] != "master" {
		return
	}
	nodes, err := local.nodes(ctx)
	if me := clusternodes.Myself(nodes); err != nil || me == nil || me.SlotCount() == 0 {
		return
	}
	addr := w.onlineReplica(ctx, local, info)
	if addr == "" {
		w.logf("hand-over: no online replica; stopping as primary")
		return
	}
	replica, err := dial(addr, w.User, w.Password, w.DialTimeout, w.TLS)
	if err != nil {
		w.logf("hand-over: %v", err)
		return
	}
	defer replica.close()
	if _, err := replica.str(ctx, "CLUSTER", "FAILOVER"); err != nil {
		w.logf("hand-over: %v", err)
	} else if w.waitRole(ctx, local, "slave", w.HandOverTimeout/2) {
		w.logf("hand-over: replica %s took over the slots", addr)
		return
	}
	// The election failed (primaries refuse a second vote for a shard within twice the node
	// timeout): pause writes, let the replica catch up, and take over without a vote.
	if w.takeOver(ctx, local, replica) {
		w.logf("hand-over: replica %s took over the slots (writes paused, CLUSTER FAILOVER TAKEOVER)", addr)
		return
	}
	w.logf("hand-over: replica %s did not take over within %s; stopping as primary", addr, w.HandOverTimeout)
}

// onlineReplica is the best online replica of the local primary (see bestOnlineReplica).
// When replicas are attached but none is online yet (still syncing, as after a failover or
// a restart), it waits up to half of HandOverTimeout for one, rather than stopping as
// primary and leaving the slots to the node timeout. A primary without replicas stops at once.
func (w *Wrapper) onlineReplica(ctx context.Context, local *server, info map[string]string) string {
	addr := bestOnlineReplica(info)
	if addr != "" || info["connected_slaves"] == "0" || info["connected_slaves"] == "" {
		return addr
	}
	w.logf("hand-over: no online replica yet; waiting up to %s", w.HandOverTimeout/2)
	w.poll(ctx, w.HandOverTimeout/2, func(info map[string]string) bool {
		addr = bestOnlineReplica(info)
		return addr != ""
	}, local)
	return addr
}

// takeOver pauses writes on the local primary until the replica has its whole replication
// stream, then makes the replica take over without an election.
func (w *Wrapper) takeOver(ctx context.Context, local, replica *server) bool {
	pause := w.HandOverTimeout / 2
	if _, err := local.str(ctx, "CLIENT", "PAUSE", strconv.FormatInt(pause.Milliseconds(), 10), "WRITE"); err != nil {
		w.logf("hand-over: %v", err)
		return false
	}
	defer func() { _, _ = local.str(ctx, "CLIENT", "UNPAUSE") }()
	info, err := local.replication(ctx)
	if err != nil {
		w.logf("hand-over: %v", err)
		return false
	}
	target, _ := strconv.ParseInt(info["master_repl_offset"], 10, 64)
	if !w.waitOffset(ctx, replica, target, pause/2) {
		w.logf("hand-over: replica %s did not reach offset %d", replica.addr, target)
		return false
	}
	if _, err := replica.str(ctx, "CLUSTER", "FAILOVER", "TAKEOVER"); err != nil {
		w.logf("hand-over: %v", err)
		return false
	}
	return w.waitRole(ctx, local, "slave", pause/2)
}

// bestOnlineReplica is ip:port of the online replica with the highest offset in a primary's
// INFO replication ("slave0:ip=10.0.0.5,port=6379,state=online,offset=123,lag=0"); "" when
// there is none.
func bestOnlineReplica(info map[string]string) string {
	best, bestOffset := "", int64(-1)
	for k, v := range info {
		if !strings.HasPrefix(k, "slave") || strings.HasPrefix(k, "slave_") {
			continue
		}
		f := map[string]string{}
		for _, kv := range strings.Split(v, ",") {
			if a, b, ok := strings.Cut(kv, "="); ok {
				f[a] = b
			}
		}
		offset, err := strconv.ParseInt(f["offset"], 10, 64)
		if f["state"] != "online" || err != nil || f["ip"] == "" || offset <= bestOffset {
			continue
		}
		best, bestOffset = f["ip"]+":"+f["port"], offset
	}
	return best
}
