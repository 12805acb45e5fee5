// Package realserver loads rendered valkey.conf files into a real server (valkey-server, or
// redis-server as a stand-in; see test/valkeyserver). It holds tests only, apart from
// valkeyconf, so that valkeyconf's fuzz target is built without a client library.
package realserver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"

	"valkey.io/operator/internal/valkeyconf"
	"valkey.io/operator/test/valkeyserver"
)

// node is a real server started on a rendered config the way the pod starts it (the config
// file, then the loopback address and free ports where the pod gives its IP and fixed
// ports), with a client connected to it.
type node struct {
	t *testing.T
	*valkeyserver.Server
	valkey.Client
}

func startNode(t *testing.T, conf, dir string) *node {
	t.Helper()
	file := filepath.Join(dir, "valkey.conf")
	if err := os.WriteFile(file, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	return startNodeWith(t, valkeyserver.Options{Dir: dir, ConfigFile: file})
}

func startNodeWith(t *testing.T, opts valkeyserver.Options) *node {
	t.Helper()
	s, err := valkeyserver.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Kill() })
	c, err := valkey.NewClient(valkey.ClientOption{
		InitAddress: []string{s.Addr()}, ForceSingleClient: true, DisableCache: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return &node{t: t, Server: s, Client: c}
}

// stop sends SIGTERM, as the kubelet does, and waits for the exit.
func (n *node) stop() {
	n.t.Helper()
	n.Close()
	if err := n.Stop(); err != nil {
		n.t.Fatal(err)
	}
}

// restart starts the stopped server again on the same config, address and data.
func (n *node) restart() *node {
	n.t.Helper()
	return startNodeWith(n.t, n.Options)
}

func (n *node) do(cmd valkey.Completed) valkey.ValkeyResult {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return n.Do(ctx, cmd)
}

// must runs a command that must succeed.
func (n *node) must(cmd valkey.Completed) valkey.ValkeyResult {
	n.t.Helper()
	r := n.do(cmd)
	if err := r.Error(); err != nil {
		n.t.Fatalf("%v: %v", cmd.Commands(), err)
	}
	return r
}

// info returns the fields of an INFO section, empty when the server does not answer.
func (n *node) info(section string) map[string]string {
	s, err := n.do(n.B().Info().Section(section).Build()).ToString()
	if err != nil {
		return map[string]string{}
	}
	return fields(s)
}

// clusterInfo returns the fields of CLUSTER INFO, empty when the server does not answer.
func (n *node) clusterInfo() map[string]string {
	s, err := n.do(n.B().ClusterInfo().Build()).ToString()
	if err != nil {
		return map[string]string{}
	}
	return fields(s)
}

// fields reads "key:value" lines (RESP3 sends them as a verbatim string that starts with
// "txt:").
func fields(s string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimPrefix(s, "txt:"), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			out[k] = v
		}
	}
	return out
}

// waitFor polls the servers' state until cond holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestRenderedConfigInRealServer loads rendered configs into the real server: hostile but
// accepted values stay one value, owned settings hold, and with persistence the server
// snapshots on SIGTERM (without persistence it does not).
func TestRenderedConfigInRealServer(t *testing.T) {
	hostile := map[string]string{
		"syslog-ident":        `x" dir "/tmp`,
		"proc-title-template": `{title} \" \\x0a dir /tmp '`,
		"repl-backlog-size":   "32mb",
	}
	for _, persist := range []bool{true, false} {
		t.Run(fmt.Sprintf("persistence=%v", persist), func(t *testing.T) {
			dir := t.TempDir()
			conf, err := valkeyconf.Render(valkeyconf.Params{DataDir: dir, Persistence: persist, RDB: true, Config: hostile})
			if err != nil {
				t.Fatal(err)
			}
			s := startNode(t, conf, dir)
			wantSave := ""
			if persist {
				wantSave = "3600 1 300 100 60 10000"
			}
			want := map[string]string{
				"dir": dir, "cluster-enabled": "yes", "cluster-config-file": dir + "/nodes.conf",
				"save": wantSave, "appendonly": "no", "repl-backlog-size": "33554432", "protected-mode": "no",
				"syslog-ident": hostile["syslog-ident"], "proc-title-template": hostile["proc-title-template"],
			}
			for k, v := range want {
				got, err := s.do(s.B().ConfigGet().Parameter(k).Build()).AsStrMap()
				if err != nil || len(got) != 1 || got[k] != v {
					t.Errorf("CONFIG GET %s = %q (%v), want %q", k, got, err, v)
				}
			}
			s.must(s.B().ClusterAddslotsrange().StartSlotEndSlot().StartSlotEndSlot(0, 16383).Build())
			waitFor(t, "cluster_state:ok", func() bool {
				return s.info("cluster")["cluster_enabled"] == "1" && s.clusterInfo()["cluster_state"] == "ok"
			})
			s.must(s.B().Set().Key("k").Value("v").Build())
			s.stop()
			_, err = os.Stat(filepath.Join(dir, "dump.rdb"))
			if persist && err != nil {
				t.Errorf("no dump.rdb after SIGTERM with persistence: %v", err)
			}
			if !persist && err == nil {
				t.Errorf("dump.rdb written without persistence")
			}
		})
	}
}

// TestRestartedReplicaResyncsPartially runs a primary and a replica on rendered persistence
// configs, restarts the replica with SIGTERM while the primary takes writes, and checks that
// it comes back with a partial resync (no full copy) and the writes it missed. That needs
// the snapshot on SIGTERM: without it the replica would restart from its first sync's RDB,
// whose offset the backlog no longer covers.
func TestRestartedReplicaResyncsPartially(t *testing.T) {
	primaryDir, replicaDir := t.TempDir(), t.TempDir()
	render := func(dir string) string {
		// A small backlog, so that only the offset saved on SIGTERM (not the one of the
		// initial sync, which the replica's first RDB carries) is still covered by it.
		conf, err := valkeyconf.Render(valkeyconf.Params{DataDir: dir, Persistence: true, RDB: true,
			Config: map[string]string{"repl-backlog-size": "1mb"}})
		if err != nil {
			t.Fatal(err)
		}
		return conf
	}
	primary := startNode(t, render(primaryDir), primaryDir)
	replica := startNode(t, render(replicaDir), replicaDir)
	primary.must(primary.B().ClusterAddslotsrange().StartSlotEndSlot().StartSlotEndSlot(0, 16383).Build())
	primaryID, err := primary.must(primary.B().ClusterMyid().Build()).ToString()
	if err != nil {
		t.Fatal(err)
	}
	replica.must(replica.B().ClusterMeet().Ip(primary.Host).Port(int64(primary.Port)).Build())
	waitFor(t, "the replica to know the primary", func() bool {
		nodes, err := replica.do(replica.B().ClusterNodes().Build()).ToString()
		return err == nil && strings.Contains(nodes, primaryID)
	})
	replica.must(replica.B().ClusterReplicate().NodeId(primaryID).Build())
	linkUp := func() bool { return replica.info("replication")["master_link_status"] == "up" }
	waitFor(t, "the replication link", linkUp)
	// The first sync starts at once (repl-diskless-sync-delay 0): the link can be up before
	// the primary serves its slots.
	waitFor(t, "cluster_state:ok", func() bool { return primary.clusterInfo()["cluster_state"] == "ok" })
	big := strings.Repeat("x", 10000)
	for i := 0; i < 200; i++ { // 2MB: more than the backlog
		primary.must(primary.B().Set().Key(fmt.Sprintf("before-%d", i)).Value(big).Build())
	}
	waitFor(t, "the replica to catch up", func() bool {
		offset := replica.info("replication")["slave_repl_offset"]
		return offset != "" && offset == primary.info("replication")["master_repl_offset"]
	})
	fullBefore := primary.info("stats")["sync_full"]

	replica.stop()
	for i := 0; i < 100; i++ {
		primary.must(primary.B().Set().Key(fmt.Sprintf("during-%d", i)).Value("v").Build())
	}
	replica = replica.restart()
	waitFor(t, "the replication link after the restart", linkUp)
	stats := primary.info("stats")
	if stats["sync_full"] != fullBefore {
		t.Errorf("sync_full went from %s to %s: the restarted replica was fully resynced", fullBefore, stats["sync_full"])
	}
	if stats["sync_partial_ok"] != "1" {
		t.Errorf("sync_partial_ok = %s, want 1", stats["sync_partial_ok"])
	}
	waitFor(t, "the missed writes on the replica", func() bool {
		return strings.HasPrefix(replica.info("keyspace")["db0"], "keys=300,")
	})
}
