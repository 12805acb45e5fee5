package valkeystart

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"

	"valkey.io/operator/internal/clusternodes"
	"valkey.io/operator/test/valkeyserver"
)

// shard is a test cluster: primary p with replica r owning every slot but the last
// len(others), each of which is owned by one of the others (primaries that can vote).
type shard struct {
	p, r   *valkeyserver.Server
	others []*valkeyserver.Server
	pID    string
}

const testPassword = "fence-test"

// startServer starts a cluster-enabled server with the test password, killed at the end.
func startServer(t *testing.T) *valkeyserver.Server {
	t.Helper()
	s, err := valkeyserver.Start(valkeyserver.Options{Cluster: true, Password: testPassword})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Kill() })
	return s
}

func startShard(t *testing.T, voters int) *shard {
	t.Helper()
	start := func() *valkeyserver.Server { return startServer(t) }
	sh := &shard{p: start(), r: start()}
	for range voters {
		sh.others = append(sh.others, start())
	}
	ctx := context.Background()
	last := 16383 - voters
	do(t, sh.p.Addr(), "CLUSTER", "ADDSLOTSRANGE", "0", strconv.Itoa(last))
	for i, o := range sh.others {
		do(t, o.Addr(), "CLUSTER", "ADDSLOTS", strconv.Itoa(last+1+i))
	}
	for _, s := range append([]*valkeyserver.Server{sh.r}, sh.others...) {
		do(t, s.Addr(), "CLUSTER", "MEET", s.Host, strconv.Itoa(sh.p.Port))
	}
	sh.pID = do(t, sh.p.Addr(), "CLUSTER", "MYID")
	eventually(t, 15*time.Second, "the replica sees the primary", func() bool {
		_, err := str(ctx, sh.r.Addr(), "CLUSTER", "REPLICATE", sh.pID)
		return err == nil
	})
	waitLinkUp(t, sh.r.Addr())
	eventually(t, 15*time.Second, "every member sees every other", func() bool {
		out, err := str(ctx, sh.p.Addr(), "CLUSTER", "INFO")
		return err == nil && strings.Contains(out, "cluster_state:ok") &&
			strings.Contains(out, fmt.Sprintf("cluster_known_nodes:%d", 2+voters))
	})
	return sh
}

// writeAcked writes n keys of the primary's slots at addr, each acknowledged by WAIT 1.
func writeAcked(t *testing.T, addr, prefix string, n int) []string {
	t.Helper()
	cl := client(t, addr)
	defer cl.Close()
	ctx := context.Background()
	var keys []string
	for i := 0; len(keys) < n; i++ {
		key := fmt.Sprintf("%s-%d", prefix, i)
		slot, err := cl.Do(ctx, cl.B().ClusterKeyslot().Key(key).Build()).AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		if slot >= 16380 {
			continue // a voter's slot
		}
		if err := cl.Do(ctx, cl.B().Set().Key(key).Value(key).Build()).Error(); err != nil {
			t.Fatalf("SET %s: %v", key, err)
		}
		acks, err := cl.Do(ctx, cl.B().Wait().Numreplicas(1).Timeout(2000).Build()).AsInt64()
		if err != nil || acks < 1 {
			t.Fatalf("WAIT 1 after %s: %d acks, %v", key, acks, err)
		}
		keys = append(keys, key)
	}
	return keys
}

// missing lists the keys the server at addr does not hold.
func missing(t *testing.T, addr string, keys []string) []string {
	t.Helper()
	cl := client(t, addr)
	defer cl.Close()
	// A primary that just took over answers CLUSTERDOWN for up to a node timeout (Valkey's
	// rejoin delay after a minority): that is no lost key. Read once it serves, and take an
	// error as what it is, not as a key it lacks.
	eventually(t, 15*time.Second, addr+" reports cluster_state ok", func() bool {
		out, err := cl.Do(context.Background(), cl.B().ClusterInfo().Build()).ToString()
		return err == nil && strings.Contains(out, "cluster_state:ok")
	})
	var out []string
	for _, k := range keys {
		v, err := cl.Do(context.Background(), cl.B().Get().Key(k).Build()).ToString()
		if err != nil && !valkey.IsValkeyNil(err) {
			t.Fatalf("GET %s on %s: %v", k, addr, err)
		}
		if v != k {
			out = append(out, k)
		}
	}
	return out
}

// TestFenceAfterCrash kills a primary whose RDB is older than what its replica acknowledged,
// then starts it again through the wrapper: the replica takes over first (CLUSTER FAILOVER
// FORCE with voters, TAKEOVER without), the old primary rejoins as its replica, and no
// acknowledged key is lost. Then a SIGTERM to the wrapper hands the slots back to the
// replica before the server stops, and the next start sees the clean stop.
func TestFenceAfterCrash(t *testing.T) {
	for _, voters := range []int{2, 0} {
		t.Run(fmt.Sprintf("%d other primaries", voters), func(t *testing.T) {
			sh := startShard(t, voters)
			acked := writeAcked(t, sh.p.Addr(), "saved", 200)
			do(t, sh.p.Addr(), "SAVE")
			acked = append(acked, writeAcked(t, sh.p.Addr(), "unsaved", 300)...)
			if err := sh.p.Kill(); err != nil {
				t.Fatal(err)
			}

			w, logs, sigs, exit := runWrapper(t, sh.p)
			waitRole(t, sh.r.Addr(), "master")
			waitRole(t, sh.p.Addr(), "slave")
			waitLinkUp(t, sh.p.Addr())
			if lost := missing(t, sh.r.Addr(), acked); len(lost) > 0 {
				t.Fatalf("%d of %d acknowledged keys lost on the new primary, e.g. %s; wrapper log:\n%s", len(lost), len(acked), lost[0], logs)
			}
			t.Logf("crash: %d acknowledged keys, 0 lost; wrapper log:\n%s", len(acked), logs)

			// Back to the wrapped server as primary, then stopped: it hands over first.
			do(t, sh.p.Addr(), "CLUSTER", "FAILOVER")
			waitRole(t, sh.p.Addr(), "master")
			acked = append(acked, writeAcked(t, sh.p.Addr(), "handover", 200)...)
			sigs <- syscall.SIGTERM
			if code := <-exit; code != 0 {
				t.Fatalf("wrapper exited %d after SIGTERM; log:\n%s", code, logs)
			}
			if role := roleOf(t, sh.r.Addr()); role != "master" {
				t.Fatalf("after the hand-over the replica is %s, want master; log:\n%s", role, logs)
			}
			if lost := missing(t, sh.r.Addr(), acked); len(lost) > 0 {
				t.Fatalf("%d of %d acknowledged keys lost after the hand-over; log:\n%s", len(lost), len(acked), logs)
			}
			if _, err := os.Stat(filepath.Join(w.DataDir, MarkerFile)); err != nil {
				t.Fatalf("no clean-stop marker after a clean stop: %v", err)
			}
		})
	}
}

// runWrapper runs the server's command line (as its test config) through a Wrapper.
func runWrapper(t *testing.T, s *valkeyserver.Server) (*Wrapper, *syncBuffer, chan os.Signal, chan int) {
	t.Helper()
	return runWrapperWith(t, s, nil)
}

// runWrapperWith is runWrapper with the Wrapper changed by change first.
func runWrapperWith(t *testing.T, s *valkeyserver.Server, change func(*Wrapper)) (*Wrapper, *syncBuffer, chan os.Signal, chan int) {
	t.Helper()
	bin, err := valkeyserver.Binary()
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	sigs := make(chan os.Signal, 1)
	w := &Wrapper{
		DataDir: s.Dir, Addr: s.Addr(), Password: testPassword, Durable: true,
		DialTimeout: time.Second, FailoverTimeout: 3 * time.Second, HandOverTimeout: 10 * time.Second,
		Log: log.New(logs, "", 0), Signals: sigs,
	}
	if change != nil {
		change(w)
	}
	exit, stopped := make(chan int, 1), make(chan struct{})
	go func() {
		code := w.Run(context.Background(), []string{bin, filepath.Join(s.Dir, "test.conf")})
		close(stopped)
		exit <- code
	}()
	t.Cleanup(func() {
		select {
		case sigs <- syscall.SIGKILL:
		case <-stopped:
		}
		<-stopped
	})
	return w, logs, sigs, exit
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func client(t *testing.T, addr string) valkey.Client {
	t.Helper()
	s, err := dial(addr, "", testPassword, 2*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s.cl
}

func str(ctx context.Context, addr string, args ...string) (string, error) {
	s, err := dial(addr, "", testPassword, 2*time.Second, nil)
	if err != nil {
		return "", err
	}
	defer s.close()
	return s.str(ctx, args...)
}

func do(t *testing.T, addr string, args ...string) string {
	t.Helper()
	out, err := str(context.Background(), addr, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func roleOf(t *testing.T, addr string) string {
	t.Helper()
	return clusternodes.ParseInfo(do(t, addr, "INFO", "replication"))["role"]
}

func waitRole(t *testing.T, addr, role string) {
	t.Helper()
	eventually(t, 30*time.Second, addr+" is "+role, func() bool {
		out, err := str(context.Background(), addr, "INFO", "replication")
		return err == nil && clusternodes.ParseInfo(out)["role"] == role
	})
}

func waitLinkUp(t *testing.T, addr string) {
	t.Helper()
	eventually(t, 30*time.Second, addr+" finished its sync", func() bool {
		out, err := str(context.Background(), addr, "INFO", "replication")
		info := clusternodes.ParseInfo(out)
		return err == nil && info["master_link_status"] == "up" && info["master_sync_in_progress"] == "0"
	})
}

func eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting until %s", timeout, what)
		}
		<-tick.C
	}
}

// TestFenceNeverPromotesAReplicaThatNeverSynced: a replica that lost its data (a new claim)
// is full-syncing when its primary is killed. The sync is aborted and the replica holds
// nothing; it must not take over, or the restarted primary would rejoin as its replica and
// sync the empty dataset. Redis 7.0 reports slave_repl_offset:1 for such a replica (no
// primary, no cached primary); the primary starts on its own data, and nothing is lost.
func TestFenceNeverPromotesAReplicaThatNeverSynced(t *testing.T) {
	sh := startShard(t, 0)
	acked := writeAcked(t, sh.p.Addr(), "saved", 300)
	do(t, sh.p.Addr(), "SAVE")
	do(t, sh.p.Addr(), "CONFIG", "SET", "rdb-key-save-delay", "100000") // 0.1 s per key: the sync takes 30 s
	do(t, sh.p.Addr(), "CONFIG", "SET", "repl-diskless-sync-delay", "0")

	if err := sh.r.Kill(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"dump.rdb", "appendonlydir"} {
		if err := os.RemoveAll(filepath.Join(sh.r.Dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	opts := sh.r.Options
	opts.Config = append(append([]string{}, opts.Config...), "repl-timeout 3") // an aborted transfer is seen within 3 s
	r, err := valkeyserver.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Kill() })
	ctx := context.Background()
	eventually(t, 15*time.Second, "the emptied replica is full-syncing", func() bool {
		out, err := str(ctx, r.Addr(), "INFO", "replication")
		return err == nil && strings.Contains(out, "master_sync_in_progress:1")
	})
	if err := sh.p.Kill(); err != nil {
		t.Fatal(err)
	}
	var info string
	defer func() { t.Logf("the replica's replication:\n%s", info) }()
	eventually(t, 15*time.Second, "the replica's sync is aborted", func() bool {
		info, err = str(ctx, r.Addr(), "INFO", "replication")
		return err == nil && strings.Contains(info, "master_sync_in_progress:0")
	})
	t.Logf("the replica after its aborted sync:\n%s", info)

	_, logs, _, _ := runWrapper(t, sh.p)
	eventually(t, 20*time.Second, "the crashed primary answers", func() bool {
		_, err := str(ctx, sh.p.Addr(), "PING")
		return err == nil
	})
	if role := roleOf(t, sh.p.Addr()); role != "master" {
		t.Fatalf("the crashed primary restarted as %s, want master on its own data; wrapper log:\n%s", role, logs)
	}
	if role := roleOf(t, r.Addr()); role != "slave" {
		t.Fatalf("the replica that never synced is %s; wrapper log:\n%s", role, logs)
	}
	eventually(t, 20*time.Second, "the primary serves its slots", func() bool {
		out, err := str(ctx, sh.p.Addr(), "CLUSTER", "INFO")
		return err == nil && strings.Contains(out, "cluster_state:ok")
	})
	if lost := missing(t, sh.p.Addr(), acked); len(lost) > 0 {
		t.Fatalf("%d of %d acknowledged keys lost (keyspace: %s); wrapper log:\n%s", len(lost), len(acked), do(t, sh.p.Addr(), "INFO", "keyspace"), logs)
	}
	t.Logf("%d acknowledged keys, 0 lost; wrapper log:\n%s", len(acked), logs)
}

// TestFenceWaitsForAReplicaThatDoesNotAnswerYet: a primary is killed with writes its RDB
// does not hold, and its replica, which has them, does not answer for a few seconds (as
// while it restarts or loads its data). The primary does not start on its older data: it
// looks again until the replica answers, which then takes over; no acknowledged key is lost.
func TestFenceWaitsForAReplicaThatDoesNotAnswerYet(t *testing.T) {
	sh := startShard(t, 0)
	acked := writeAcked(t, sh.p.Addr(), "saved", 200)
	do(t, sh.p.Addr(), "SAVE")
	acked = append(acked, writeAcked(t, sh.p.Addr(), "unsaved", 300)...)
	pid := processID(t, sh.r.Addr())
	if err := sh.p.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := make(chan struct{})
	go func() {
		defer close(resumed)
		time.Sleep(4 * time.Second) // the replica's outage the test simulates, not a wait for a state
		_ = syscall.Kill(pid, syscall.SIGCONT)
	}()
	t.Cleanup(func() { <-resumed })

	_, logs, _, _ := runWrapperWith(t, sh.p, func(w *Wrapper) { w.ReplicaWait = 30 * time.Second })
	waitRole(t, sh.r.Addr(), "master")
	waitRole(t, sh.p.Addr(), "slave")
	waitLinkUp(t, sh.p.Addr())
	if lost := missing(t, sh.r.Addr(), acked); len(lost) > 0 {
		t.Fatalf("%d of %d acknowledged keys lost; wrapper log:\n%s", len(lost), len(acked), logs)
	}
	if !strings.Contains(logs.String(), "looking again") {
		t.Fatalf("the primary did not wait for its replica; wrapper log:\n%s", logs)
	}
	t.Logf("%d acknowledged keys, 0 lost; wrapper log:\n%s", len(acked), logs)
}

// processID is the server's process ID (INFO server).
func processID(t *testing.T, addr string) int {
	t.Helper()
	out := do(t, addr, "INFO", "server")
	pid, err := strconv.Atoi(clusternodes.ParseInfo(out)["process_id"])
	if err != nil {
		t.Fatal(err)
	}
	return pid
}
