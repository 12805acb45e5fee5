package migration

import (
	"context"
	"time"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/topologycontroller/round"
)

// Options are the controller's flags for moving slots.
type Options struct {
	// KeysOnly moves every slot key by key, even between Valkey 9 servers
	// (--migration-mode=keys).
	KeysOnly bool
	// BatchSize is how many keys one MIGRATE moves (--migration-batch-size).
	BatchSize int
	// SlotsPerReconcile is how many slots one round moves key by key at most
	// (--migration-slots-per-reconcile).
	SlotsPerReconcile int
	// CommandTimeout bounds a MIGRATE and a replica's wait for a moved batch
	// (--valkey-command-timeout).
	CommandTimeout time.Duration
}

// Mover moves slots between the primaries of the clusters of one controller. It keeps one
// record between rounds: the slots whose moves stalled (stallBook).
type Mover struct {
	Options Options
	// Event records the moves' events.
	Event round.EventFunc
	// Flush empties m, a primary without slots, before it is given slots, when every key it
	// holds is held by the slots' owners too (membership's rule); false when it may not be
	// emptied, which the round then says.
	Flush func(ctx context.Context, st *round.State, m *round.Member) (bool, error)

	stalls stallBook
	// underway: the clusters whose slots moved and are not balanced yet (underway.go).
	underway underwayBook
}

// event records an event of the moves.
func (mo *Mover) event(st *Round, node *valkeyv1.ValkeyNode, eventType, reason, action, msg string, args ...any) {
	mo.Event(st.State, node, eventType, reason, action, msg, args...)
}

// Round is the moves' part of one reconcile: the observed cluster and what its moves found.
type Round struct {
	*round.State

	migrating bool
	balanced  bool
	// stalled describes the slots whose keys could not move (see stallBook); stalledNow
	// are the slots that failed this round, stalledBy the same by source and target.
	stalled    string
	stalledNow map[int]bool
	stalledBy  map[[2]*round.Member][]int
}

// NewRound is the moves' part of the round st, before any phase ran.
func NewRound(st *round.State) *Round {
	return &Round{State: st, stalledNow: map[int]bool{}, stalledBy: map[[2]*round.Member][]int{}}
}

// Found is what the moves of a round found, for the cluster's status and the phases after
// them.
type Found struct {
	// Migrating: slots are moving (or an interrupted migration was finished) this round.
	Migrating bool
	// Balanced: the slots phase found nothing to move.
	Balanced bool
	// Stalled describes the slots whose keys could not move ("" when none).
	Stalled string
}

// Found is what the round's moves found so far.
func (st *Round) Found() Found {
	return Found{Migrating: st.migrating, Balanced: st.balanced, Stalled: st.stalled}
}
