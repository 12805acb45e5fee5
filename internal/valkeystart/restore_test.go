package valkeystart

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"valkey.io/operator/internal/clusternodes"
	"valkey.io/operator/test/valkeyserver"
)

func TestKeptNodesFile(t *testing.T) {
	conf := "aaa 10.0.0.2:6379@16379,,tls-port=0,shard-id=s1 master - 0 1 2 connected 0-5460\n" +
		"bbb 10.0.0.3:6379@16379,,tls-port=0,shard-id=s1 myself,slave aaa 0 0 2 connected\n" +
		"vars currentEpoch 7 lastVoteEpoch 3\n"
	got, err := keptNodesFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	want := "bbb 10.0.0.3:6379@16379,,tls-port=0,shard-id=s1 myself,master - 0 0 0 connected\n" +
		"vars currentEpoch 0 lastVoteEpoch 0\n"
	if got != want {
		t.Fatalf("kept nodes.conf:\n%s\nwant:\n%s", got, want)
	}
	if _, err := keptNodesFile("aaa 10.0.0.2:6379@16379 master - 0 1 2 connected\nvars currentEpoch 7 lastVoteEpoch 3\n"); err == nil {
		t.Fatal("a nodes.conf without a myself line was accepted")
	}
}

func TestRestoreRefusesAnUnknownIdentity(t *testing.T) {
	if _, err := Restore(t.TempDir(), "b1", "Keep", t.Logf); err == nil {
		t.Fatal("identity Keep (not keep) was accepted")
	}
}

// TestRestoreStartsAlone copies the data directory of a primary of a running three-primary
// cluster (RDB and AOF holding keys of several slots), runs the restore step on the copy,
// and starts a server on it: the server is alone, a primary with the expected node ID that
// owns exactly the slots of its keys, serves every key, and the source cluster never hears
// of it.
func TestRestoreStartsAlone(t *testing.T) {
	for _, identity := range []string{IdentityFresh, IdentityKeep} {
		t.Run(identity, func(t *testing.T) { testRestoreStartsAlone(t, identity) })
	}
}

func testRestoreStartsAlone(t *testing.T, identity string) {
	members := startPrimaries(t, 3)
	src := members[0]
	srcID := do(t, src.Addr(), "CLUSTER", "MYID")
	keys, slots := writeSlotKeys(t, src.Addr(), 40)
	bgsave(t, src.Addr())
	dir := t.TempDir()
	copyDir(t, src.Dir, dir)
	if err := os.WriteFile(filepath.Join(dir, MarkerFile), []byte("x\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	did, err := Restore(dir, "backup-1", identity, t.Logf)
	if err != nil || !did {
		t.Fatalf("restore: did %v, err %v", did, err)
	}
	if _, err := os.Stat(filepath.Join(dir, MarkerFile)); err == nil {
		t.Fatal("the clean-stop marker survived the restore")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, RestoredFile)); string(b) != "backup-1\n" {
		t.Fatalf("restored marker holds %q", b)
	}

	s, err := valkeyserver.Start(valkeyserver.Options{Cluster: true, Password: testPassword, Dir: dir,
		// Alone, the server covers only its keys' slots: serve them anyway to read them back.
		Config: []string{"appendonly yes", "cluster-require-full-coverage no"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Kill() })
	me := aloneAsPrimary(t, s.Addr())
	if identity == IdentityKeep && me.ID != srcID {
		t.Fatalf("identity keep: node ID %s, want %s", me.ID, srcID)
	}
	if identity == IdentityFresh && me.ID == srcID {
		t.Fatalf("identity fresh: the node kept ID %s", me.ID)
	}
	if got := ownedSlots(me); !slices.Equal(got, slots) {
		t.Fatalf("the restored server owns slots %v, its keys are in %v", got, slots)
	}
	eventually(t, 15*time.Second, "the restored server serves its slots", func() bool {
		out, err := str(context.Background(), s.Addr(), "CLUSTER", "INFO")
		return err == nil && strings.Contains(out, "cluster_state:ok")
	})
	if gone := missing(t, s.Addr(), keys); len(gone) > 0 {
		t.Fatalf("%d of %d keys missing after the restore: %v", len(gone), len(keys), gone)
	}
	for _, m := range members {
		if out := do(t, m.Addr(), "CLUSTER", "NODES"); strings.Contains(out, me.ID) && me.ID != srcID || strings.Count(strings.TrimSpace(out), "\n") != 2 {
			t.Fatalf("a member of the source cluster sees the restored server:\n%s", out)
		}
	}

	// A restart of the restored node leaves what it saved since alone.
	if did, err := Restore(dir, "backup-1", identity, t.Logf); err != nil || did {
		t.Fatalf("second restore with the same id: did %v, err %v", did, err)
	}
}

// startPrimaries starts n cluster-mode servers with AOF on, each owning an equal share of
// the slots, met together.
func startPrimaries(t *testing.T, n int) []*valkeyserver.Server {
	t.Helper()
	var servers []*valkeyserver.Server
	for i := range n {
		s, err := valkeyserver.Start(valkeyserver.Options{Cluster: true, Password: testPassword, Config: []string{"appendonly yes"}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Kill() })
		from, to := i*16384/n, (i+1)*16384/n-1
		do(t, s.Addr(), "CLUSTER", "ADDSLOTSRANGE", strconv.Itoa(from), strconv.Itoa(to))
		if i > 0 {
			do(t, s.Addr(), "CLUSTER", "MEET", servers[0].Host, strconv.Itoa(servers[0].Port))
		}
		servers = append(servers, s)
	}
	eventually(t, 15*time.Second, "the cluster is ok", func() bool {
		out, err := str(context.Background(), servers[0].Addr(), "CLUSTER", "INFO")
		return err == nil && strings.Contains(out, "cluster_state:ok") && strings.Contains(out, fmt.Sprintf("cluster_known_nodes:%d", n))
	})
	return servers
}

// writeSlotKeys writes n keys of the primary at addr's slots and returns them with their
// sorted distinct slots.
func writeSlotKeys(t *testing.T, addr string, n int) ([]string, []int) {
	t.Helper()
	var keys []string
	seen := map[int]bool{}
	for i := 0; len(keys) < n; i++ {
		key := fmt.Sprintf("restore-%d", i)
		slot := num(t, addr, "CLUSTER", "KEYSLOT", key)
		if slot >= 16384/3 {
			continue
		}
		do(t, addr, "SET", key, key)
		keys = append(keys, key)
		seen[slot] = true
	}
	var slots []int
	for s := range seen {
		slots = append(slots, s)
	}
	slices.Sort(slots)
	return keys, slots
}

// bgsave runs BGSAVE at addr and waits until it finished.
func bgsave(t *testing.T, addr string) {
	t.Helper()
	before := num(t, addr, "LASTSAVE")
	do(t, addr, "BGSAVE")
	eventually(t, 15*time.Second, "BGSAVE finished", func() bool {
		out, err := str(context.Background(), addr, "INFO", "persistence")
		info := clusternodes.ParseInfo(out)
		return err == nil && info["rdb_bgsave_in_progress"] == "0" && num(t, addr, "LASTSAVE") != before
	})
}

// num runs a command answering an integer.
func num(t *testing.T, addr string, args ...string) int {
	t.Helper()
	cl := client(t, addr)
	defer cl.Close()
	n, err := cl.Do(context.Background(), cl.B().Arbitrary(args...).Build()).AsInt64()
	if err != nil {
		t.Fatal(err)
	}
	return int(n)
}

// aloneAsPrimary waits until the server at addr answers CLUSTER NODES and returns its only
// line, failing unless it is the only node and a primary.
func aloneAsPrimary(t *testing.T, addr string) clusternodes.Node {
	t.Helper()
	nodes, err := clusternodes.Parse(do(t, addr, "CLUSTER", "NODES"))
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 1 || !nodes[0].Myself() || !nodes[0].Primary() {
		t.Fatalf("the restored server is not alone as a primary: %+v", nodes)
	}
	return nodes[0]
}

func ownedSlots(n clusternodes.Node) []int {
	var slots []int
	for _, r := range n.Slots {
		for s := r.Start; s <= r.End; s++ {
			slots = append(slots, s)
		}
	}
	return slots
}

// copyDir copies the regular files of src (one level of subdirectories, as appendonlydir)
// into dst, as a volume snapshot restored into another claim would hold them.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		from, to := filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())
		if e.IsDir() {
			if err := os.MkdirAll(to, 0o700); err != nil {
				t.Fatal(err)
			}
			copyDir(t, from, to)
			continue
		}
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}
