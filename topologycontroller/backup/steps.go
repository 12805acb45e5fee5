package backup

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/valkey-io/valkey-go"

	"valkey.io/operator/internal/clusternodes"
	"valkey.io/operator/topologycontroller/round"
)

// saveStep takes one step of a shard's save on m, the node chosen, and tells whether it
// advanced (false: it waits for the server; the round looks again shortly). Nothing here
// writes to a primary unless it is the node saved: the primary is only read (INFO).
func (sv *Saver) saveStep(ctx context.Context, st *Round, m *round.Member, ss *shardSave) (bool, error) {
	switch ss.stage {
	case stageCatchUp:
		return catchUp(ctx, st, m, ss)
	case stageBGSave:
		return startBGSave(ctx, st, m, ss)
	case stageSaving:
		return bgsaveDone(ctx, st, m, ss, st.Cluster.Spec.Persistence.AOFEnabled())
	case stageRewrite:
		return startRewrite(ctx, st, m, ss)
	case stageRewriting:
		return rewriteDone(ctx, st, m, ss)
	}
	return false, nil
}

// catchUp waits for the replica to reach the primary's offset at the saved point; past
// Options.BackupCatchUpTimeout the primary is saved instead.
func catchUp(ctx context.Context, st *Round, m *round.Member, ss *shardSave) (bool, error) {
	info, err := st.Conns.Str(ctx, m.Addr, "INFO", "replication")
	if err != nil {
		return false, err
	}
	switch {
	case round.ReplicationOffset(clusternodes.ParseInfo(info)) >= ss.offset:
		ss.stage = stageBGSave
		return true, nil
	case time.Now().After(ss.deadline):
		ss.node, ss.stage = ss.primary, stageBGSave
		return true, nil
	}
	return false, nil
}

// startBGSave sends BGSAVE once no save or rewrite runs on the server and its clock has
// passed its last save's second (so LASTSAVE advances), noting the counters before it.
func startBGSave(ctx context.Context, st *Round, m *round.Member, ss *shardSave) (bool, error) {
	info, err := persistenceInfo(ctx, st, m)
	if err != nil {
		return false, err
	}
	if sec := info.serverSecond(); info.busy() || (sec != 0 && sec <= info.int("rdb_last_save_time")) {
		return false, nil
	}
	ss.saves, ss.lastSave = info.int("rdb_saves"), info.int("rdb_last_save_time")
	waiting, err := background(ctx, st, m, "BGSAVE")
	if err != nil || waiting {
		return false, err
	}
	ss.stage = stageSaving
	return false, nil // the save has just started
}

// bgsaveDone checks that the BGSAVE sent finished well: none in progress, the saves counted
// and LASTSAVE advanced, rdb_last_bgsave_status ok.
func bgsaveDone(ctx context.Context, st *Round, m *round.Member, ss *shardSave, aof bool) (bool, error) {
	info, err := persistenceInfo(ctx, st, m)
	if err != nil || info["rdb_bgsave_in_progress"] == "1" {
		return false, err
	}
	if s := info["rdb_last_bgsave_status"]; s != "ok" {
		return false, &saveFailure{fmt.Sprintf("BGSAVE on %s failed (rdb_last_bgsave_status:%s): see the server's log; the volume may be full", m.Node.Name, s)}
	}
	if info.int("rdb_saves") <= ss.saves || info.int("rdb_last_save_time") <= ss.lastSave {
		ss.stage = stageBGSave // no save of ours finished (the server restarted?): save again
		return true, nil
	}
	ss.stage = stageSaved
	if aof {
		ss.stage = stageRewrite
	}
	return true, nil
}

// startRewrite sends BGREWRITEAOF once no save or rewrite runs, noting the rewrites before.
func startRewrite(ctx context.Context, st *Round, m *round.Member, ss *shardSave) (bool, error) {
	info, err := persistenceInfo(ctx, st, m)
	if err != nil || info.busy() {
		return false, err
	}
	ss.rewrites = info.int("aof_rewrites")
	waiting, err := background(ctx, st, m, "BGREWRITEAOF")
	if err != nil || waiting {
		return false, err
	}
	ss.stage = stageRewriting
	return false, nil
}

// rewriteDone checks that the rewrite sent finished well.
func rewriteDone(ctx context.Context, st *Round, m *round.Member, ss *shardSave) (bool, error) {
	info, err := persistenceInfo(ctx, st, m)
	if err != nil || info.busy() {
		return false, err
	}
	if s := info["aof_last_bgrewrite_status"]; s != "ok" {
		return false, &saveFailure{fmt.Sprintf("BGREWRITEAOF on %s failed (aof_last_bgrewrite_status:%s): see the server's log", m.Node.Name, s)}
	}
	if info.int("aof_rewrites") <= ss.rewrites {
		ss.stage = stageRewrite
		return true, nil
	}
	ss.stage = stageSaved
	return true, nil
}

// background sends BGSAVE or BGREWRITEAOF; waiting is true when the server has one
// running already (it is awaited, then sent again).
func background(ctx context.Context, st *Round, m *round.Member, command string) (waiting bool, err error) {
	res, err := st.Conns.Do(ctx, m.Addr, command)
	if err != nil {
		return false, err
	}
	err = res.Error()
	if err == nil {
		return false, nil
	}
	if ve, ok := valkey.IsValkeyErr(err); ok {
		if msg := ve.Error(); strings.Contains(msg, "in progress") {
			return true, nil
		}
		return false, &saveFailure{fmt.Sprintf("%s on %s refused: %s", command, m.Node.Name, ve.Error())}
	}
	return false, fmt.Errorf("%s on %s: %w", command, m.Node.Name, err)
}

// serverInfo is INFO server and persistence, by field.
type serverInfo map[string]string

func persistenceInfo(ctx context.Context, st *Round, m *round.Member) (serverInfo, error) {
	out, err := st.Conns.Str(ctx, m.Addr, "INFO", "server", "persistence")
	if err != nil {
		return nil, err
	}
	return serverInfo(clusternodes.ParseInfo(out)), nil
}

func (i serverInfo) int(key string) int64 {
	n, _ := strconv.ParseInt(i[key], 10, 64)
	return n
}

// busy tells whether a save or a rewrite runs or is scheduled.
func (i serverInfo) busy() bool {
	return i["rdb_bgsave_in_progress"] == "1" || i["aof_rewrite_in_progress"] == "1" || i["aof_rewrite_scheduled"] == "1"
}

// serverSecond is the server's clock, in Unix seconds (0 when it does not say).
func (i serverInfo) serverSecond() int64 { return i.int("server_time_usec") / 1_000_000 }
