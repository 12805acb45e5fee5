package valkeystart

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"valkey.io/operator/internal/clusternodes"
	"valkey.io/operator/test/valkeyserver"
)

// TestHandOverWaitsForSyncingReplica stops a primary while its only replica is attached
// but still in a full sync: the wrapper waits for the replica to come online and hands the
// slots over, rather than stopping as primary (without other primaries no election would
// ever promote the replica).
func TestHandOverWaitsForSyncingReplica(t *testing.T) {
	sh := startShard(t, 0)
	acked := writeAcked(t, sh.p.Addr(), "saved", 50)
	do(t, sh.p.Addr(), "SAVE")
	if err := sh.p.Kill(); err != nil {
		t.Fatal(err)
	}
	_, logs, sigs, exit := runWrapper(t, sh.p)
	waitRole(t, sh.r.Addr(), "master")
	waitRole(t, sh.p.Addr(), "slave")
	waitLinkUp(t, sh.p.Addr())
	do(t, sh.p.Addr(), "CLUSTER", "FAILOVER")
	waitRole(t, sh.p.Addr(), "master")
	acked = append(acked, writeAcked(t, sh.p.Addr(), "acked", 100)...)

	// The replica stops, the primary's backlog overflows, and the replica comes back: its
	// partial sync is refused and the full sync waits 3 s before it starts.
	for _, kv := range [][2]string{{"repl-backlog-size", "16384"}, {"repl-diskless-sync", "yes"}, {"repl-diskless-sync-delay", "3"}} {
		do(t, sh.p.Addr(), "CONFIG", "SET", kv[0], kv[1])
	}
	if err := sh.r.Stop(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 15*time.Second, "the primary has no replica", func() bool {
		return clusternodes.ParseInfo(do(t, sh.p.Addr(), "INFO", "replication"))["connected_slaves"] == "0"
	})
	for i := range 64 {
		do(t, sh.p.Addr(), "SET", "filler-"+strings.Repeat("x", i%8), strings.Repeat("v", 1024))
	}
	r, err := valkeyserver.Start(sh.r.Options)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Kill() })
	eventually(t, 15*time.Second, "the replica is attached and syncing", func() bool {
		info := clusternodes.ParseInfo(do(t, sh.p.Addr(), "INFO", "replication"))
		return info["connected_slaves"] == "1" && !strings.Contains(info["slave0"], "state=online")
	})

	sigs <- syscall.SIGTERM
	if code := <-exit; code != 0 {
		t.Fatalf("wrapper exited %d after SIGTERM; log:\n%s", code, logs)
	}
	if role := roleOf(t, r.Addr()); role != "master" {
		t.Fatalf("after the hand-over the replica is %s, want master; log:\n%s", role, logs)
	}
	if lost := missing(t, r.Addr(), acked); len(lost) > 0 {
		t.Fatalf("%d of %d acknowledged keys lost after the hand-over; log:\n%s", len(lost), len(acked), logs)
	}
	t.Logf("hand-over to a syncing replica; wrapper log:\n%s", logs)
}
