package round

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/valkey-io/valkey-go"
)

// A server in cluster mode has one database, 0, unless cluster-databases (Valkey 9) gives it
// more. CLUSTER COUNTKEYSINSLOT and GETKEYSINSLOT, DBSIZE, EXISTS, MEMORY USAGE, DEL and the
// source of MIGRATE work in the connection's selected database, and FLUSHALL empties every
// one: a check that a server's keys exist elsewhere, or the move of a slot's keys, goes
// through each database that holds keys (KeyDatabases). Database 0 is read on the shared
// connection; another one on a dedicated connection that selects it and is closed after, so
// that no later command of the round runs in it by mistake.

// Database is one database of a server that holds keys, with their number.
type Database struct {
	Index int
	Keys  int64
}

// KeyDatabases are the databases of the server at addr that hold keys, lowest first
// (INFO keyspace lists only those: db0, db5, …). None when the server holds no key.
func KeyDatabases(ctx context.Context, cs *Conns, addr string) ([]Database, error) {
	info, err := cs.Str(ctx, addr, "INFO", "keyspace")
	if err != nil {
		return nil, err
	}
	dbs, err := parseKeyspace(info)
	if err != nil {
		return nil, fmt.Errorf("INFO keyspace on %s: %w", addr, err)
	}
	return dbs, nil
}

// TotalKeys is the number of keys of the databases.
func TotalKeys(dbs []Database) int64 {
	var n int64
	for _, db := range dbs {
		n += db.Keys
	}
	return n
}

// parseKeyspace reads INFO keyspace: "db<index>:keys=<n>,expires=…" per database with keys.
func parseKeyspace(info string) ([]Database, error) {
	var out []Database
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		name, fields, ok := strings.Cut(line, ":")
		if !ok || !strings.HasPrefix(name, "db") {
			continue
		}
		index, err := strconv.Atoi(strings.TrimPrefix(name, "db"))
		if err != nil || index < 0 {
			return nil, fmt.Errorf("database %q", name)
		}
		keys := int64(-1)
		for _, f := range strings.Split(fields, ",") {
			if v, ok := strings.CutPrefix(f, "keys="); ok {
				if keys, err = strconv.ParseInt(v, 10, 64); err != nil {
					return nil, fmt.Errorf("keys of %s: %q", name, v)
				}
			}
		}
		if keys < 0 {
			return nil, fmt.Errorf("no keys= for %s in %q", name, line)
		}
		if keys > 0 {
			out = append(out, Database{Index: index, Keys: keys})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out, nil
}

// DedicatedIn is Dedicated with database db selected. A connection that selected another
// database than 0 is closed when fn returns, not handed back for later use.
func (c *Conns) DedicatedIn(ctx context.Context, addr string, db int, fn func(valkey.DedicatedClient) error) error {
	if db == 0 {
		return c.Dedicated(addr, fn)
	}
	return c.Dedicated(addr, func(dc valkey.DedicatedClient) error {
		defer dc.Close()
		c.sent.Add(1)
		if err := dc.Do(ctx, dc.B().Select().Index(int64(db)).Build()).Error(); err != nil {
			return fmt.Errorf("SELECT %d on %s: %w", db, addr, err)
		}
		return fn(dc)
	})
}

// MultiIn is Multi in database db of the server at addr.
func (c *Conns) MultiIn(ctx context.Context, addr string, db int, cmds [][]string) ([]valkey.ValkeyResult, error) {
	if db == 0 || len(cmds) == 0 {
		return c.Multi(ctx, addr, cmds)
	}
	var res []valkey.ValkeyResult
	err := c.DedicatedIn(ctx, addr, db, func(dc valkey.DedicatedClient) error {
		built := make(valkey.Commands, 0, len(cmds))
		for _, args := range cmds {
			built = append(built, dc.B().Arbitrary(args...).Build())
		}
		c.sent.Add(int64(len(built)))
		res = dc.DoMulti(ctx, built...)
		return firstError(addr, cmds, res)
	})
	return res, err
}

// CountKeysIn is CountKeys in database db.
func CountKeysIn(ctx context.Context, cs *Conns, addr string, db int, slots []int) (map[int]int64, error) {
	cmds := make([][]string, len(slots))
	for i, slot := range slots {
		cmds[i] = []string{"CLUSTER", "COUNTKEYSINSLOT", strconv.Itoa(slot)}
	}
	res, err := cs.MultiIn(ctx, addr, db, cmds)
	if err != nil {
		return nil, err
	}
	out := make(map[int]int64, len(slots))
	for i, slot := range slots {
		n, err := res[i].AsInt64()
		if err != nil {
			return nil, fmt.Errorf("CLUSTER COUNTKEYSINSLOT %d in database %d on %s: %w", slot, db, addr, err)
		}
		if n > 0 {
			out[slot] = n
		}
	}
	return out, nil
}

// CountKeys is the number of keys of each slot on the server at addr, in all its databases
// (CLUSTER COUNTKEYSINSLOT in each database that holds keys, pipelined). Slots without keys
// are left out.
func CountKeys(ctx context.Context, cs *Conns, addr string, slots []int) (map[int]int64, error) {
	dbs, err := KeyDatabases(ctx, cs, addr)
	if err != nil {
		return nil, err
	}
	out := map[int]int64{}
	for _, db := range dbs {
		counts, err := CountKeysIn(ctx, cs, addr, db.Index, slots)
		if err != nil {
			return nil, err
		}
		for slot, n := range counts {
			out[slot] += n
		}
	}
	return out, nil
}
