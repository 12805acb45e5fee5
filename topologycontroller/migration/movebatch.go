package migration

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/valkey-io/valkey-go"

	"valkey.io/operator/internal/clusternodes"
	"valkey.io/operator/topologycontroller/round"
)

// A batch of keys leaves the source only once a replica of the target holds it. MIGRATE
// without COPY deletes the keys on the source as the target acknowledges them: a target
// killed before its replica received them restarts from its last save without them, and
// they are gone (an acknowledged write of the source's shard, lost). So each batch is:
//
//  1. WATCH its keys on the source, and MIGRATE ... COPY REPLACE them (the source keeps them
//     and goes on serving them: the slot is MIGRATING and they exist there);
//  2. wait until a replica of the target has processed the target's replication stream up
//     to its offset read after the MIGRATE (skipped when the target has no replica, as in a
//     cluster without replicas, where no write is acknowledged by one);
//  3. MULTI, DEL the keys, EXEC on the source: EXEC does nothing when a client wrote one of
//     them since the WATCH, and the batch is moved again (REPLACE) by the next pass.
//
// A target killed after 1 or 2 is fenced by valkey-start like a primary owning slots (its
// importing slots count): its replica, which holds every key deleted on the source, takes
// over.

// replicaAckPoll is how often a replica's offset is read while a batch waits for it.
const replicaAckPoll = 2 * time.Millisecond

// errBatchChanged is a batch that must be moved again: a client wrote or deleted one of its
// keys while it moved.
var errBatchChanged = errors.New("a key of the batch changed while it moved")

// runMigrates moves the batches of database db one after the other on one connection to
// src (a WATCH holds on its connection), which selects db. A batch the servers refuse marks
// its slot failed (its later batches are not sent this round); a batch whose keys changed
// is moved again by the next pass of moveKeysIn; an error reaching src fails the whole
// round.
func (mo *Mover) runMigrates(ctx context.Context, st *Round, src, dst *round.Member, db int, batches []keyBatch, failed map[int]string) error {
	if len(batches) == 0 {
		return nil
	}
	host, port, err := net.SplitHostPort(dst.Addr)
	if err != nil {
		return err
	}
	replicas := followersOf(st, dst)
	return st.Conns.DedicatedIn(ctx, src.Addr, db, func(c valkey.DedicatedClient) error {
		for _, b := range batches {
			if failed[b.slot] != "" {
				continue
			}
			err := mo.moveBatch(ctx, c, st, dst, replicas, migrateCmd(host, port, db, st.Conns.MigrateAuth(dst.Addr), b, mo.Options.CommandTimeout), b)
			var refused *batchRefused
			switch {
			case err == nil:
				keysMigrated.WithLabelValues(st.Cluster.Namespace, st.Cluster.Name).Add(float64(len(b.keys)))
			case errors.Is(err, errBatchChanged):
			case errors.As(err, &refused):
				failed[b.slot] = refused.Error()
			default:
				return err
			}
		}
		return nil
	})
}

// batchRefused is a batch a server refused (its error) or that no replica of the target
// acknowledged in time: the slot stalls and is tried again later.
type batchRefused struct{ why string }

func (e *batchRefused) Error() string { return e.why }

// moveBatch runs the three steps above for one batch on the dedicated connection c to the
// source.
func (mo *Mover) moveBatch(ctx context.Context, c valkey.DedicatedClient, st *Round, dst *round.Member, replicas []*round.Member, migrate []string, b keyBatch) error {
	res := c.DoMulti(ctx,
		c.B().Arbitrary("WATCH").Keys(b.keys...).Build(),
		c.B().Arbitrary(migrate...).Build())
	round.CommandsSent.Add(2)
	if err := batchError(res[0].Error(), res[1].Error()); err != nil {
		c.Do(ctx, c.B().Arbitrary("UNWATCH").Build())
		return err
	}
	if err := mo.replicaHas(ctx, st, dst, replicas); err != nil {
		c.Do(ctx, c.B().Arbitrary("UNWATCH").Build())
		return err
	}
	res = c.DoMulti(ctx,
		c.B().Arbitrary("MULTI").Build(),
		c.B().Arbitrary("DEL").Keys(b.keys...).Build(),
		c.B().Arbitrary("EXEC").Build())
	round.CommandsSent.Add(3)
	exec := res[2]
	if valkey.IsValkeyNil(exec.Error()) {
		return errBatchChanged // EXEC aborted: a watched key was written
	}
	return batchError(res[0].Error(), res[1].Error(), exec.Error())
}

// batchError sorts the errors of a batch's commands: nil when none failed; errBatchChanged
// when a key moved or went meanwhile (a redirection, NOKEY); a *batchRefused for another
// error of the server; else the first error (the connection failed).
func batchError(errs ...error) error {
	for _, err := range errs {
		if err == nil {
			continue
		}
		verr, isServer := valkey.IsValkeyErr(err)
		if !isServer {
			return err
		}
		_, moved := verr.IsMoved()
		_, ask := verr.IsAsk()
		switch {
		case moved || ask || verr.IsTryAgain() || strings.HasPrefix(verr.Error(), "NOKEY"):
			return errBatchChanged
		default:
			return &batchRefused{why: verr.Error()}
		}
	}
	return nil
}

// replicaHas waits until one of replicas has processed dst's replication stream up to the
// offset dst reports now (the batch's keys are within it), for at most the command timeout.
// Without replicas there is nothing to wait for.
func (mo *Mover) replicaHas(ctx context.Context, st *Round, dst *round.Member, replicas []*round.Member) error {
	if len(replicas) == 0 {
		return nil
	}
	info, err := st.Conns.Str(ctx, dst.Addr, "INFO", "replication")
	if err != nil {
		return err
	}
	want := round.ReplicationOffset(clusternodes.ParseInfo(info))
	deadline := time.Now().Add(mo.Options.CommandTimeout)
	for {
		for _, m := range replicas {
			if info, err := st.Conns.Str(ctx, m.Addr, "INFO", "replication"); err == nil && round.ReplicationOffset(clusternodes.ParseInfo(info)) >= want {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return &batchRefused{why: fmt.Sprintf("no replica of %s reached its replication offset %d within %s: the keys stay on the source", dst.Node.Name, want, mo.Options.CommandTimeout)}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(replicaAckPoll):
		}
	}
}

// followersOf are the members that replicate dst with their link up.
func followersOf(st *Round, dst *round.Member) []*round.Member {
	var out []*round.Member
	for _, m := range st.SortedMembers() {
		if m != dst && m.Reachable() && !m.Self.Primary() && m.Self.PrimaryID == dst.ID() && m.LinkUp() {
			out = append(out, m)
		}
	}
	return out
}
