package valkeystart

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"valkey.io/operator/internal/clusternodes"
)

// fence runs before the server starts. A server that was a primary owning slots and did not
// stop cleanly (killed, OOM-killed, its node lost) would load data older than what its
// replicas acknowledged, stay primary, and drag them back to it. So its most up-to-date
// in-sync replica takes over first; the server then starts, learns from the cluster that
// its slots moved to a higher epoch, and rejoins as that replica's replica. A nil error
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
	if me == nil || !me.Primary() || me.SlotCount() == 0 {
		return nil
	}
	w.logf("unclean restart of primary %s (%d slots): asking an in-sync replica to take over first", me.ID, me.SlotCount())
	view := w.liveView(ctx, nodes)
	if view == nil {
		w.logf("no other member is reachable: starting on this server's own data")
		return nil
	}
	if cur := clusternodes.ByID(view, me.ID); cur == nil || !cur.Primary() || cur.SlotCount() == 0 {
		w.logf("the cluster already moved this server's slots: starting it as a replica")
		return nil
	}
	replica := w.bestReplica(ctx, view, me.ID)
	if replica == nil {
		w.logf("no in-sync replica is reachable: starting on this server's own data")
		return nil
	}
	defer replica.close()
	return w.promote(ctx, replica)
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

// liveView is CLUSTER NODES of the first other member that answers; nil when none does.
func (w *Wrapper) liveView(ctx context.Context, saved []clusternodes.Node) []clusternodes.Node {
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
		if err == nil {
			return view
		}
		w.logf("member %s: %v", n.Addr, err)
	}
	return nil
}

// bestReplica connects to the replica of primaryID with the highest replication offset
// among those that finished their sync; nil when none is reachable.
func (w *Wrapper) bestReplica(ctx context.Context, view []clusternodes.Node, primaryID string) *server {
	var best *server
	var bestOffset int64
	for _, n := range view {
		if n.PrimaryID != primaryID || n.Failed() || n.Addr == "" {
			continue
		}
		s, offset, err := w.syncedReplica(ctx, n.Addr)
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
	return best
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
		return nil, 0, err
	}
	return s, offset, nil
}

// promote makes the replica take over its primary's slots: CLUSTER FAILOVER FORCE (the
// other primaries vote), then TAKEOVER (no vote: a cluster whose only primary is this
// one). An error when neither succeeded: the server must not start on older data.
func (w *Wrapper) promote(ctx context.Context, replica *server) error {
	for _, mode := range []string{"FORCE", "TAKEOVER"} {
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
