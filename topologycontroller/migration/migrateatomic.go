package migration

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/topologycontroller/planner"
	"valkey.io/operator/topologycontroller/round"
)

// atomicPoll is how soon an atomic migration in flight is looked at again: the server
// moves the slots on its own, usually within a second or two.
const atomicPoll = 250 * time.Millisecond

// slotJob is one atomic slot migration as CLUSTER GETSLOTMIGRATIONS reports it (newest
// first; finished jobs stay listed for a while, in memory only).
type slotJob struct {
	name, operation, ranges, target, state, message string
}

// running tells whether the job has not reached a final state.
func (j slotJob) running() bool {
	return j.state != "success" && j.state != "failed" && j.state != "cancelled"
}

// slotJobs lists the atomic slot migrations the server at addr knows of.
func slotJobs(ctx context.Context, cs *round.Conns, addr string) ([]slotJob, error) {
	r, err := cs.Do(ctx, addr, "CLUSTER", "GETSLOTMIGRATIONS")
	if err != nil {
		return nil, err
	}
	entries, err := r.ToArray()
	if err != nil {
		return nil, fmt.Errorf("CLUSTER GETSLOTMIGRATIONS on %s: %w", addr, err)
	}
	jobs := make([]slotJob, 0, len(entries))
	for i := range entries {
		f, err := entries[i].AsStrMap()
		if err != nil {
			return nil, fmt.Errorf("CLUSTER GETSLOTMIGRATIONS on %s: %w", addr, err)
		}
		jobs = append(jobs, slotJob{
			name: f["name"], operation: f["operation"], ranges: f["slot_ranges"],
			target: f["target_node"], state: f["state"], message: f["message"],
		})
	}
	return jobs, nil
}

// atomicMoves tells whether the moves from src can go atomically: the mode allows it and
// the source and every target run a server that can.
func (mo *Mover) atomicMoves(st *Round, src *round.Member, moves []planner.Move) bool {
	if mo.Options.KeysOnly || !src.AtomicMigration() {
		return false
	}
	for _, mv := range moves {
		if !st.ByID[mv.To].AtomicMigration() {
			return false
		}
	}
	return true
}

// migrateAtomically moves src's planned slots with one CLUSTER MIGRATESLOTS (one
// SLOTSRANGE … NODE group per target), unless an export of src is still running. The
// server moves the keys and hands the slots over at once, so clients never see ASK; the
// job lives on the source, so a controller restart only looks again. A job that failed is
// reported, and its slots start again after a backoff (see stallBook). It returns the
// slots in flight.
func (mo *Mover) migrateAtomically(ctx context.Context, st *Round, src *round.Member, moves []planner.Move) (int, error) {
	inFlight := 0
	for _, mv := range moves {
		inFlight += len(mv.Slots)
	}
	moves = ownMoves(src, moves)
	if len(moves) == 0 {
		// The seed's view still gives src slots it has handed over already (a primary
		// that hands over its last slot becomes a replica of the taker): look again.
		return inFlight, nil
	}
	jobs, err := slotJobs(ctx, st.Conns, src.Addr)
	if err != nil {
		return 0, err
	}
	var last *slotJob
	for i := range jobs {
		if jobs[i].operation != "EXPORT" {
			continue
		}
		if jobs[i].running() {
			return inFlight, nil // the server is at it: look again soon
		}
		if last == nil {
			last = &jobs[i]
		}
	}
	if last != nil && last.state != "success" {
		mo.stallJob(st, src, moves, *last)
	}
	// The slots of a failed job start again once their backoff is over.
	if moves = mo.readyMoves(st, moves); len(moves) == 0 {
		return 0, nil
	}
	args := []string{"CLUSTER", "MIGRATESLOTS"}
	for _, mv := range moves {
		args = append(args, "SLOTSRANGE")
		for _, rg := range planner.CompactSlots(mv.Slots) {
			args = append(args, strconv.Itoa(rg.Start), strconv.Itoa(rg.End))
		}
		args = append(args, "NODE", mv.To)
	}
	if err := st.Conns.OK(ctx, src.Addr, args...); err != nil {
		return 0, err
	}
	ordered := 0
	for _, mv := range moves {
		ordered += len(mv.Slots)
	}
	slotsMigrated.WithLabelValues(st.Cluster.Namespace, st.Cluster.Name).Add(float64(ordered))
	if migrationStarting(st) {
		mo.event(st, src.Node, corev1.EventTypeNormal, valkeyv1.EventMigrating, "MigrateSlots",
			"moving %d slots from %s atomically to %s", inFlight, src.Node.Name, targetNames(st, moves))
	}
	return inFlight, nil
}

func targetNames(st *Round, moves []planner.Move) string {
	names := make([]string, 0, len(moves))
	for _, mv := range moves {
		names = append(names, st.ByID[mv.To].Node.Name)
	}
	return strings.Join(names, ", ")
}

// ownMoves keeps the slots of moves that src, by its own word this round, still owns as a
// primary.
func ownMoves(src *round.Member, moves []planner.Move) []planner.Move {
	if !src.Self.Primary() {
		return nil
	}
	var out []planner.Move
	for _, mv := range moves {
		var slots []int
		for _, slot := range mv.Slots {
			if ownsSlot(src.Self, slot) {
				slots = append(slots, slot)
			}
		}
		if len(slots) > 0 {
			out = append(out, planner.Move{From: mv.From, To: mv.To, Slots: slots})
		}
	}
	return out
}
