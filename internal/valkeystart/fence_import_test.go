package valkeystart

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"valkey.io/operator/internal/clusternodes"
	"valkey.io/operator/test/valkeyserver"
)

// TestFenceAfterCrashOfAnImporter: a primary that owns no slot yet imports one key by key;
// a batch of keys reaches it and its replica, then leaves the source (as a key-by-key
// migration deletes them), and the primary is killed with an RDB saved before the batch.
// Started again through the wrapper, it counts its importing slot as owned: its replica,
// which holds the batch, takes over (TAKEOVER: Valkey elects no replica of a primary
// without slots) instead of full-syncing the older, empty data set from it.
func TestFenceAfterCrashOfAnImporter(t *testing.T) {
	src, imp, rep := startServer(t), startServer(t), startServer(t)
	ctx := context.Background()
	do(t, src.Addr(), "CLUSTER", "ADDSLOTSRANGE", "0", "16383")
	for _, s := range []*valkeyserver.Server{imp, rep} {
		do(t, s.Addr(), "CLUSTER", "MEET", src.Host, strconv.Itoa(src.Port))
	}
	// A primary given its first slots reports cluster_state ok only a node timeout later.
	eventually(t, 15*time.Second, "the source reports cluster_state ok", func() bool {
		out, err := str(ctx, src.Addr(), "CLUSTER", "INFO")
		return err == nil && strings.Contains(out, "cluster_state:ok")
	})
	srcID, impID := do(t, src.Addr(), "CLUSTER", "MYID"), do(t, imp.Addr(), "CLUSTER", "MYID")
	eventually(t, 15*time.Second, "the replica follows the importer", func() bool {
		_, err := str(ctx, rep.Addr(), "CLUSTER", "REPLICATE", impID)
		return err == nil
	})
	waitLinkUp(t, rep.Addr())

	slot := strconv.FormatInt(number(t, src.Addr(), "CLUSTER", "KEYSLOT", "{batch}"), 10)
	var keys []string
	for i := range 100 {
		key := fmt.Sprintf("{batch}-%d", i)
		do(t, src.Addr(), "SET", key, key)
		keys = append(keys, key)
	}
	do(t, imp.Addr(), "CLUSTER", "SETSLOT", slot, "IMPORTING", srcID)
	do(t, src.Addr(), "CLUSTER", "SETSLOT", slot, "MIGRATING", impID)
	do(t, imp.Addr(), "SAVE") // the importer's last save holds none of the batch

	migrate := append([]string{"MIGRATE", imp.Host, strconv.Itoa(imp.Port), "", "0", "5000", "AUTH", testPassword, "KEYS"}, keys...)
	do(t, src.Addr(), migrate...)
	eventually(t, 15*time.Second, "the importer's replica has the batch", func() bool {
		p, err1 := str(ctx, imp.Addr(), "INFO", "replication")
		r, err2 := str(ctx, rep.Addr(), "INFO", "replication")
		return err1 == nil && err2 == nil &&
			clusternodes.ParseInfo(p)["master_repl_offset"] == clusternodes.ParseInfo(r)["slave_repl_offset"]
	})
	if n := number(t, src.Addr(), "CLUSTER", "COUNTKEYSINSLOT", slot); n != 0 {
		t.Fatalf("the source still holds %d keys of slot %s: the batch did not leave it", n, slot)
	}

	if err := imp.Kill(); err != nil {
		t.Fatal(err)
	}
	_, logs, _, _ := runWrapper(t, imp)
	waitRole(t, rep.Addr(), "master")
	if n := number(t, rep.Addr(), "CLUSTER", "COUNTKEYSINSLOT", slot); n != int64(len(keys)) {
		t.Fatalf("the replica that took over holds %d of the %d keys moved; wrapper log:\n%s", n, len(keys), logs)
	}
	if !strings.Contains(logs.String(), "importing") {
		t.Errorf("the wrapper did not say it fenced an importer; log:\n%s", logs)
	}
	t.Logf("the importer's replica took over with the %d keys moved; wrapper log:\n%s", len(keys), logs)
}

// number is the integer reply of a command.
func number(t *testing.T, addr string, args ...string) int64 {
	t.Helper()
	cl := client(t, addr)
	defer cl.Close()
	n, err := cl.Do(context.Background(), cl.B().Arbitrary(args...).Build()).AsInt64()
	if err != nil {
		t.Fatalf("%v on %s: %v", args, addr, err)
	}
	return n
}
