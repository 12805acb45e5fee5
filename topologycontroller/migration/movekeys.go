package migration

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/valkey-io/valkey-go"

	"valkey.io/operator/topologycontroller/round"
)

// keyBatch is the keys of one slot that one MIGRATE carries, and their size.
type keyBatch struct {
	slot  int
	keys  []string
	bytes int64
}

// moveKeys migrates every key of the slots from src to dst, in each database of src that
// holds keys (a server with cluster-databases has more than database 0), until
// GETKEYSINSLOT finds none left there. It returns the slots whose keys could not move, with
// the server's error: the others go on moving.
func (mo *Mover) moveKeys(ctx context.Context, st *Round, slots []int, src, dst *round.Member) (map[int]string, error) {
	dbs, err := round.KeyDatabases(ctx, st.Conns, src.Addr)
	if err != nil {
		return nil, err
	}
	failed := map[int]string{}
	for _, db := range dbs {
		if err := mo.moveKeysIn(ctx, st, db.Index, slots, src, dst, failed); err != nil {
			return nil, err
		}
	}
	return failed, nil
}

// moveKeysIn migrates the keys of the slots not failed yet in database db of src to the
// same database of dst; a slot whose keys could not move is added to failed.
func (mo *Mover) moveKeysIn(ctx context.Context, st *Round, db int, slots []int, src, dst *round.Member, failed map[int]string) error {
	var pending []int
	for _, slot := range slots {
		if failed[slot] == "" {
			pending = append(pending, slot)
		}
	}
	for len(pending) > 0 {
		keys, err := mo.slotKeys(ctx, st, src, db, pending)
		if err != nil {
			return err
		}
		batches, err := mo.keyBatches(ctx, st, src, db, pending, keys)
		if err != nil {
			return err
		}
		if err := mo.runMigrates(ctx, st, src, dst, db, batches, failed); err != nil {
			return err
		}
		var next []int
		for _, slot := range pending {
			if len(keys[slot]) > 0 && failed[slot] == "" {
				next = append(next, slot)
			}
		}
		pending = next
	}
	return nil
}

// slotKeys is up to MigrationBatchSize keys of each slot in database db of src
// (GETKEYSINSLOT, pipelined).
func (mo *Mover) slotKeys(ctx context.Context, st *Round, src *round.Member, db int, slots []int) (map[int][]string, error) {
	count := strconv.Itoa(mo.Options.BatchSize)
	cmds := make([][]string, 0, len(slots))
	for _, s := range slots {
		cmds = append(cmds, []string{"CLUSTER", "GETKEYSINSLOT", strconv.Itoa(s), count})
	}
	res, err := st.Conns.MultiIn(ctx, src.Addr, db, cmds)
	if err != nil {
		return nil, err
	}
	out := make(map[int][]string, len(slots))
	for i, r := range res {
		keys, err := r.AsStrSlice()
		if err != nil {
			return nil, fmt.Errorf("CLUSTER GETKEYSINSLOT %d in database %d on %s: %w", slots[i], db, src.Addr, err)
		}
		out[slots[i]] = keys
	}
	return out, nil
}

// keyBatches sizes the keys of database db (MEMORY USAGE, pipelined) and cuts each slot's
// keys into batches of at most migrateMaxBytes; a key larger than that goes alone.
func (mo *Mover) keyBatches(ctx context.Context, st *Round, src *round.Member, db int, slots []int, keys map[int][]string) ([]keyBatch, error) {
	var cmds [][]string
	for _, slot := range slots {
		for _, k := range keys[slot] {
			cmds = append(cmds, []string{"MEMORY", "USAGE", k})
		}
	}
	res, err := st.Conns.MultiIn(ctx, src.Addr, db, cmds)
	if err != nil {
		return nil, err
	}
	var out []keyBatch
	i := 0
	for _, slot := range slots {
		var b keyBatch
		for _, k := range keys[slot] {
			size, err := res[i].AsInt64()
			i++
			if err != nil && !valkey.IsValkeyNil(err) {
				return nil, fmt.Errorf("MEMORY USAGE on %s: %w", src.Addr, err)
			}
			if len(b.keys) > 0 && b.bytes+size > migrateMaxBytes {
				out = append(out, b)
				b = keyBatch{}
			}
			b.slot, b.keys, b.bytes = slot, append(b.keys, k), b.bytes+size
		}
		if len(b.keys) > 0 {
			out = append(out, b)
		}
	}
	return out, nil
}

// migrateCmd is the MIGRATE of a batch of database db into the same database of the
// target, with a timeout for its size, at most limit (the command timeout, which also
// bounds the wait for its reply). COPY: the source keeps the keys until a replica of the
// target has them (see moveBatch).
func migrateCmd(host, port string, db int, auth []string, b keyBatch, limit time.Duration) []string {
	timeout := min(migrateBaseTimeout+time.Duration(b.bytes)*time.Second/migrateBytesPerSecond, limit)
	args := []string{"MIGRATE", host, port, "", strconv.Itoa(db), strconv.FormatInt(timeout.Milliseconds(), 10), "COPY", "REPLACE"}
	args = append(args, auth...)
	return append(append(args, "KEYS"), b.keys...)
}
