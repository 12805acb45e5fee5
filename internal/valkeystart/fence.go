package valkeystart

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"valkey.io/operator/internal/clusternodes"
)

// fence runs before the server starts. A server that was a primary owning slots and did not
// stop cleanly (killed, OOM-killed, its node lost) would load data older than what its
// replicas acknowledged, stay primary, and drag them back to it. A primary importing slots
// counts as owning them: the keys moved to it were deleted on their source once its replica
// had them (a key-by-key migration), so they may exist nowhere else. So its most up-to-date
// in-sync replica takes over first; the server then starts, learns from the cluster that
// its slots moved to a higher epoch, and rejoins as that replica's replica. While a replica
// it had may hold newer data but does not answer in sync yet (restarting, loading), it looks
// again every second for up to ReplicaWait before starting on its own data. A nil error
// means the server may start.
func (w *Wrapper) fence(ctx context.Context) error {
	if w.Durable && w.stoppedCleanly() {
		w.logf("the server stopped cleanly: starting it")
		return nil
	}
	nodes, err := w.savedView()
	if err != nil || nodes == nil {
		return err
	}
	me := clusternodes.Myself(nodes)
	if me == nil || !me.Primary() || (me.SlotCount() == 0 && len(me.Importing) == 0) {
		return nil
	}
	w.logf("unclean restart of primary %s (%d slots, %d importing): asking an in-sync replica to take over first", me.ID, me.SlotCount(), len(me.Importing))
	deadline := time.Now().Add(w.ReplicaWait)
	for {
		replica, why := w.fenceOnce(ctx, nodes, me)
		if replica != nil {
			err := w.promote(ctx, replica, me.SlotCount() == 0)
			replica.close()
			return err
		}
		if why == "" {
			return nil
		}
		if !time.Now().Before(deadline) {
			w.logf("%s after %s: starting on this server's own data", why, w.ReplicaWait)
			return nil
		}
		w.logf("%s: looking again (until %s)", why, deadline.Format(time.RFC3339))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// fenceOnce looks at the cluster once. It returns the replica to promote; or nil and "" when
// the server may start at once (its slots already moved, or it has no replica to wait for);
// or nil and why it must wait: a replica of it may hold newer data (it is listed) but none
// answers in sync yet (restarting, loading its data), or no member answers.
func (w *Wrapper) fenceOnce(ctx context.Context, saved []clusternodes.Node, me *clusternodes.Node) (*server, string) {
	myID := me.ID
	view := w.liveView(ctx, saved, myID)
	if view == nil {
		if !hasReplica(saved, myID) {
			w.logf("no other member is reachable and this server had no replica: starting on its own data")
			return nil, ""
		}
		return nil, "no other member that knows this server is reachable"
	}
	// The others do not see importing slots: an importer's slots moved once it is a replica.
	if cur := clusternodes.ByID(view, myID); cur == nil || !cur.Primary() || (cur.SlotCount() == 0 && me.SlotCount() > 0) {
		w.logf("the cluster already moved this server's slots: starting it as a replica")
		return nil, ""
	}
	replica, stranded := w.bestReplica(ctx, view, myID)
	if replica != nil {
		return replica, ""
	}
	if stranded {
		w.logf("every replica of this server holds nothing of it and is not syncing: none has newer data, so waiting gains nothing; starting on its own data")
		return nil, ""
	}
	if !hasReplica(view, myID) {
		w.logf("this server has no replica: starting on its own data")
		return nil, ""
	}
	return nil, "no replica of this server answers in sync yet"
}

// hasReplica tells whether a node of view follows id.
func hasReplica(view []clusternodes.Node, id string) bool {
	for _, n := range view {
		if n.PrimaryID == id {
			return true
		}
	}
	return false
}

// stoppedCleanly tells whether the last run ended with the server exiting 0 (a SIGTERM or
// SHUTDOWN that saved the data set).
func (w *Wrapper) stoppedCleanly() bool {
	_, err := os.Stat(w.markerPath())
	return err == nil
}

func (w *Wrapper) markerPath() string { return filepath.Join(w.DataDir, MarkerFile) }

// savedView reads nodes.conf: the cluster as the server last saw it; nil without one.
func (w *Wrapper) savedView() ([]clusternodes.Node, error) {
	b, err := os.ReadFile(filepath.Join(w.DataDir, NodesFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", NodesFile, err)
	}
	nodes, err := clusternodes.Parse(string(b))
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", NodesFile, err)
	}
	return nodes, nil
}

// liveView is CLUSTER NODES of the first other member that answers and knows myID (a new
// node that has not learnt of this server yet says nothing of its slots); nil when none does.
func (w *Wrapper) liveView(ctx context.Context, saved []clusternodes.Node, myID string) []clusternodes.Node {
	for _, n := range saved {
		if n.Myself() || n.Addr == "" {
			continue
		}
		s, err := dial(n.Addr, w.User, w.Password, w.DialTimeout, w.TLS)
		if err != nil {
			w.logf("member %s: %v", n.Addr, err)
			continue
		}
		view, err := s.nodes(ctx)
		s.close()
		switch {
		case err != nil:
			w.logf("member %s: %v", n.Addr, err)
		case clusternodes.ByID(view, myID) == nil:
			w.logf("member %s does not know this server", n.Addr)
		default:
			return view
		}
	}
	return nil
}

// bestReplica connects to the replica of primaryID with the highest replication offset
// among those that finished their sync; nil when none is reachable. stranded is true when
// there is none because every replica listed answered and is stranded (see stranded).
func (w *Wrapper) bestReplica(ctx context.Context, view []clusternodes.Node, primaryID string) (_ *server, stranded bool) {
	var best *server
	var bestOffset int64
	listed, strandedCount := 0, 0
	for _, n := range view {
		if n.PrimaryID != primaryID {
			continue
		}
		listed++
		if n.Failed() || n.Addr == "" {
			continue
		}
		s, offset, err := w.syncedReplica(ctx, n.Addr)
		if errors.Is(err, errStranded) {
			strandedCount++
		}
		if err != nil {
			w.logf("replica %s: %v", n.Addr, err)
			continue
		}
		if best != nil && offset <= bestOffset {
			s.close()
			continue
		}
		if best != nil {
			best.close()
		}
		best, bestOffset = s, offset
	}
	return best, best == nil && listed > 0 && strandedCount == listed
}

// errStranded is a replica that holds nothing of its primary (emptied, or a full sync that
// never finished) and is not syncing: it can hold no newer data, and gets data only from
// this server once it runs. A replica that restarted on data of its own is not stranded,
// though it cannot sync either: the cluster may elect it (its data is recent), and then
// this server starts as its replica.
var errStranded = errors.New("a stranded replica")

// stranded tells whether INFO replication is that of a stranded replica.
func stranded(info map[string]string) bool {
	offset, _ := strconv.ParseInt(info["slave_repl_offset"], 10, 64)
	return info["role"] == "slave" && info["master_sync_in_progress"] == "0" && offset <= 1
}

// syncedReplica connects to a replica and returns its replication offset; an error when it
// is not a replica that completed a sync (clusternodes.InSyncReplica).
func (w *Wrapper) syncedReplica(ctx context.Context, addr string) (*server, int64, error) {
	s, err := dial(addr, w.User, w.Password, w.DialTimeout, w.TLS)
	if err != nil {
		return nil, 0, err
	}
	info, err := s.replication(ctx)
	if err != nil {
		s.close()
		return nil, 0, err
	}
	offset, err := clusternodes.InSyncReplica(info)
	if err != nil {
		s.close()
		if stranded(info) {
			err = fmt.Errorf("%w: %w", errStranded, err)
		}
		return nil, 0, err
	}
	return s, offset, nil
}

// promote makes the replica take over its primary's slots: CLUSTER FAILOVER FORCE (the
// other primaries vote), then TAKEOVER (no vote: a cluster whose only primary is this
// one). A replica of a primary that owns no slot yet (it was importing them) is not
// elected by Valkey: TAKEOVER at once. An error when neither succeeded: the server must
// not start on older data.
func (w *Wrapper) promote(ctx context.Context, replica *server, slotless bool) error {
	modes := []string{"FORCE", "TAKEOVER"}
	if slotless {
		modes = modes[1:]
	}
	for _, mode := range modes {
		if _, err := replica.str(ctx, "CLUSTER", "FAILOVER", mode); err != nil {
			w.logf("CLUSTER FAILOVER %s on %s: %v", mode, replica.addr, err)
			continue
		}
		if w.waitRole(ctx, replica, "master", w.FailoverTimeout) {
			w.logf("replica %s took over (CLUSTER FAILOVER %s)", replica.addr, mode)
			return nil
		}
		w.logf("replica %s did not take over within %s (CLUSTER FAILOVER %s)", replica.addr, w.FailoverTimeout, mode)
	}
	return fmt.Errorf("no replica took over from this crashed primary; not starting it on data older than its replica's")
}
