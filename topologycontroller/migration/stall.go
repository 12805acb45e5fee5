package migration

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/topologycontroller/planner"
	"valkey.io/operator/topologycontroller/round"
)

// A slot whose keys could not move is tried again after stallFirstRetry, then after twice
// as long each time, up to stallMaxRetry.
const (
	stallFirstRetry = 5 * time.Second
	stallMaxRetry   = 2 * time.Minute
)

// stall is a slot whose keys could not move: why, and when to try again.
type stall struct {
	why   string
	tries int
	next  time.Time
	// job is the atomic migration job that failed ("" for a key-by-key move).
	job string
}

// stallBook remembers, per ValkeyCluster, the slots whose keys could not move. It is the
// only thing the controller keeps between reconciles; a restart forgets it, so a stalled
// slot is tried once more at once and then backs off again.
type stallBook struct {
	mu sync.Mutex
	by map[types.UID]map[int]*stall
}

// failed records that slot could not move and returns when it is tried again.
func (b *stallBook) failed(uid types.UID, slot int, why string, now time.Time) time.Duration {
	d, _ := b.failedJob(uid, slot, "", why, now)
	return d
}

// failedJob is failed for a slot of the atomic migration job, counted once per job: fresh
// tells whether this job was not recorded yet.
func (b *stallBook) failedJob(uid types.UID, slot int, job, why string, now time.Time) (d time.Duration, fresh bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.by == nil {
		b.by = map[types.UID]map[int]*stall{}
	}
	if b.by[uid] == nil {
		b.by[uid] = map[int]*stall{}
	}
	s := b.by[uid][slot]
	if s == nil {
		s = &stall{}
		b.by[uid][slot] = s
	}
	if job != "" && s.job == job {
		return s.next.Sub(now), false
	}
	s.tries++
	s.why, s.job = why, job
	d = round.Doubling(stallFirstRetry, stallMaxRetry, s.tries)
	s.next = now.Add(d)
	return d, true
}

// waiting tells whether slot is backing off at now.
func (b *stallBook) waiting(uid types.UID, slot int, now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.by[uid][slot]
	return s != nil && now.Before(s.next)
}

// why is the reason slot stalled ("" if it did not).
func (b *stallBook) why(uid types.UID, slot int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s := b.by[uid][slot]; s != nil {
		return s.why
	}
	return ""
}

// cleared forgets the slots (they moved).
func (b *stallBook) cleared(uid types.UID, slots []int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, slot := range slots {
		delete(b.by[uid], slot)
	}
}

// keepOnly forgets the slots of uid for which keep is false (no longer open anywhere), and
// the whole cluster when nothing is left.
func (b *stallBook) keepOnly(uid types.UID, keep func(slot int, s *stall) bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for slot, s := range b.by[uid] {
		if !keep(slot, s) {
			delete(b.by[uid], slot)
		}
	}
	if len(b.by[uid]) == 0 {
		delete(b.by, uid)
	}
}

// summary describes the stalled slots of uid (the lowest first, at most a few named) and
// tells how soon the next backoff ends (0 if none is running); "" when none is stalled.
func (b *stallBook) summary(uid types.UID, now time.Time) (string, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	slots := make([]int, 0, len(b.by[uid]))
	for slot := range b.by[uid] {
		slots = append(slots, slot)
	}
	if len(slots) == 0 {
		return "", 0
	}
	sort.Ints(slots)
	var parts []string
	var next time.Duration
	for i, slot := range slots {
		s := b.by[uid][slot]
		if d := s.next.Sub(now); d > 0 && (next == 0 || d < next) {
			next = d
		}
		if i < 3 {
			parts = append(parts, fmt.Sprintf("slot %d: %s (tried %d times)", slot, s.why, s.tries))
		}
	}
	msg := fmt.Sprintf("keys of %d slots could not move, tried again with backoff: %s", len(slots), strings.Join(parts, "; "))
	if len(slots) > 3 {
		msg += fmt.Sprintf("; and %d more", len(slots)-3)
	}
	return msg, next
}

// stallSlots records slots whose keys could not move from src to dst; NoteStalls reports
// them in one Warning event per source and target.
func (mo *Mover) stallSlots(st *Round, failed map[int]string, src, dst *round.Member) {
	now := time.Now()
	p := [2]*round.Member{src, dst}
	for slot, why := range failed {
		mo.stalls.failed(st.Cluster.UID, slot, why, now)
		st.stalledNow[slot] = true
		st.stalledBy[p] = append(st.stalledBy[p], slot)
	}
}

// stallEvents sends one Warning event per source and target whose slots stalled this round.
func (mo *Mover) stallEvents(st *Round, why func(slot int) string) {
	for p, slots := range st.stalledBy {
		sort.Ints(slots)
		mo.event(st, p[1].Node, corev1.EventTypeWarning, valkeyv1.EventMigrationStalled, "MigrateSlots",
			"keys of %d slots (first slot %d) could not move from %s to %s: %s; trying again with backoff",
			len(slots), slots[0], p[0].Node.Name, p[1].Node.Name, why(slots[0]))
	}
}

// readySlots are the slots that are not backing off.
func (mo *Mover) readySlots(st *Round, slots []int) []int {
	now := time.Now()
	out := make([]int, 0, len(slots))
	for _, slot := range slots {
		if !mo.stalls.waiting(st.Cluster.UID, slot, now) {
			out = append(out, slot)
		}
	}
	return out
}

// NoteStalls forgets the stalled slots that are settled (key by key: no longer open and not
// stalled this round; atomic: the slots are balanced), and reports the others on the
// round's state (the cluster's Progressing condition).
func (mo *Mover) NoteStalls(st *Round) {
	open := map[int]bool{}
	for _, o := range openMigrations(st) {
		open[o.slot] = true
	}
	mo.stalls.keepOnly(st.Cluster.UID, func(slot int, s *stall) bool {
		return open[slot] || st.stalledNow[slot] || (s.job != "" && !st.balanced)
	})
	mo.stallEvents(st, func(slot int) string { return mo.stalls.why(st.Cluster.UID, slot) })
	msg, next := mo.stalls.summary(st.Cluster.UID, time.Now())
	if msg == "" {
		return
	}
	st.stalled = msg
	if next > 0 && (st.Requeue == 0 || next < st.Requeue) {
		st.Requeue = next
	}
}

// stallJob records the slots of moves that the failed atomic job took, once per job, with
// a Warning event.
func (mo *Mover) stallJob(st *Round, src *round.Member, moves []planner.Move, job slotJob) {
	now := time.Now()
	why := fmt.Sprintf("atomic migration %s %s (%s)", round.ShortID(job.name), job.state, job.message)
	var retry time.Duration
	fresh := false
	for _, mv := range moves {
		for _, slot := range mv.Slots {
			d, isNew := mo.stalls.failedJob(st.Cluster.UID, slot, job.name, why, now)
			retry, fresh = max(retry, d), fresh || isNew
			st.stalledNow[slot] = true
		}
	}
	if fresh {
		mo.event(st, src.Node, corev1.EventTypeWarning, valkeyv1.EventMigrationFailed, "MigrateSlots",
			"atomic migration %s of slots %s from %s %s (%s); trying again in about %s", round.ShortID(job.name), job.ranges, src.Node.Name, job.state, job.message, retry.Round(time.Second))
	}
}

// readyMoves keeps the slots of moves that are not backing off.
func (mo *Mover) readyMoves(st *Round, moves []planner.Move) []planner.Move {
	var out []planner.Move
	for _, mv := range moves {
		if slots := mo.readySlots(st, mv.Slots); len(slots) > 0 {
			out = append(out, planner.Move{From: mv.From, To: mv.To, Slots: slots})
		}
	}
	return out
}
