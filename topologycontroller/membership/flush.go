package membership

import (
	"context"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
	"valkey.io/operator/topologycontroller/planner"
	"valkey.io/operator/topologycontroller/round"
)

// keptKeysRecheck is how often a node kept out of the cluster for its keys is looked at
// again (the user copies or drops them; Valkey is no watch source).
const keptKeysRecheck = 5 * time.Second

// FlushIfHeldElsewhere empties m, a primary without slots, before it becomes a replica or
// gets its first slots, but only when every key it holds, in every database (FLUSHALL
// empties them all), exists on its slot's reachable owner in the same database (CLUSTER
// COUNTKEYSINSLOT on both first; then, where the owner holds as many, the names: CLUSTER
// GETKEYSINSLOT on m, EXISTS on the owner).
// Otherwise its keys may exist nowhere else (it came back from a retained claim after its
// slots went to a node that never had them): it is left as it is, with ClusterJoined=False
// KeysNotElsewhere and a Warning event, and false is returned.
func (ms *Members) FlushIfHeldElsewhere(ctx context.Context, st *round.State, m *round.Member) (bool, error) {
	dbs, err := round.KeyDatabases(ctx, st.Conns, m.Addr)
	if err != nil || len(dbs) == 0 {
		return err == nil, err
	}
	for _, db := range dbs {
		missing, err := keysNotElsewhere(ctx, st, m, db.Index)
		if err != nil {
			return false, err
		}
		if missing != "" {
			ms.keepKeys(st, m, round.TotalKeys(dbs), missing)
			return false, nil
		}
	}
	return true, st.Conns.OK(ctx, m.Addr, "FLUSHALL")
}

// keepKeys reports a node whose keys are not flushed (an event only when the news is new).
func (ms *Members) keepKeys(st *round.State, m *round.Member, keys int64, missing string) {
	msg := fmt.Sprintf("holds %d keys but owns no slots, and %s: they may exist nowhere else, so it is not emptied to join as a replica. "+
		"Copy the keys to the cluster (for example MIGRATE … COPY from this server to the slot's owner), or run FLUSHALL on it if they are not needed; it then joins",
		keys, missing)
	cur := status.Get(m.Node.Status.Conditions, valkeyv1.ConditionClusterJoined)
	if cur == nil || cur.Reason != valkeyv1.ReasonKeysNotElsewhere || cur.Message != msg {
		ms.Event(st, m.Node, corev1.EventTypeWarning, valkeyv1.EventKeysNotFlushed, "KeepKeys", "node %s %s", m.Node.Name, msg)
	}
	st.Out[m.Node.Name].Joined = round.JoinedCondition(false, valkeyv1.ReasonKeysNotElsewhere, msg)
	st.Wait(fmt.Sprintf("node %s holds keys found nowhere else", m.Node.Name), keptKeysRecheck)
}

// keysNotElsewhere compares, slot by slot, the keys m holds in database db with those of
// the slot's owner in the seed's view in the same database. It describes the slots whose
// owner holds fewer keys, is unknown or cannot be asked; "" when there are none.
func keysNotElsewhere(ctx context.Context, st *round.State, m *round.Member, db int) (string, error) {
	mine, err := round.CountKeysIn(ctx, st.Conns, m.Addr, db, allSlots())
	if err != nil {
		return "", err
	}
	owner := slotOwnerIDs(st)
	bySlotOwner := map[string][]int{}
	for slot := range mine {
		bySlotOwner[owner[slot]] = append(bySlotOwner[owner[slot]], slot)
	}
	theirs := map[int]int64{}
	for id, slots := range bySlotOwner {
		if o := st.ByID[id]; o != nil && id != m.ID() {
			counts, err := round.CountKeysIn(ctx, st.Conns, o.Addr, db, slots)
			if err != nil {
				return "", err
			}
			for slot, n := range counts {
				theirs[slot] = n
			}
		}
	}
	absent, err := keysAbsentOnOwners(ctx, st, m, db, mine, theirs, owner)
	if err != nil {
		return "", err
	}
	short, first := 0, ""
	for slot := 0; slot < planner.TotalSlots; slot++ {
		if mine[slot] == 0 || (theirs[slot] >= mine[slot] && absent[slot] == 0) {
			continue
		}
		short++
		if first == "" {
			first = describeShortSlot(st, slot, mine[slot], theirs[slot], owner[slot])
			if absent[slot] > 0 {
				first += fmt.Sprintf(", %d of them not there", absent[slot])
			}
		}
	}
	if short == 0 {
		return "", nil
	}
	in := ""
	if db != 0 {
		in = fmt.Sprintf("in database %d, ", db)
	}
	return fmt.Sprintf("%sin %d slots its keys are not all on the slot's owner (first: %s)", in, short, first), nil
}

// flushCheckBatch bounds the slots whose key names are read at once.
const flushCheckBatch = 512

// keysAbsentOnOwners counts, for each slot whose reachable owner holds at least as many keys
// as m in database db (a count says nothing of which keys), m's keys of it that the owner
// does not have there: CLUSTER GETKEYSINSLOT on m, EXISTS on the owner.
func keysAbsentOnOwners(ctx context.Context, st *round.State, m *round.Member, db int, mine, theirs map[int]int64, owner map[int]string) (map[int]int64, error) {
	var slots []int
	for slot := 0; slot < planner.TotalSlots; slot++ {
		if o := st.ByID[owner[slot]]; mine[slot] > 0 && theirs[slot] >= mine[slot] && o != nil && o != m {
			slots = append(slots, slot)
		}
	}
	absent := map[int]int64{}
	for start := 0; start < len(slots); start += flushCheckBatch {
		batch := slots[start:min(len(slots), start+flushCheckBatch)]
		if err := countAbsent(ctx, st, m, db, batch, mine, owner, absent); err != nil {
			return nil, err
		}
	}
	return absent, nil
}

// countAbsent adds to absent the keys of m in slots, in database db, that their owner does
// not have there.
func countAbsent(ctx context.Context, st *round.State, m *round.Member, db int, slots []int, mine map[int]int64, owner map[int]string, absent map[int]int64) error {
	gets := make([][]string, len(slots))
	for i, slot := range slots {
		gets[i] = []string{"CLUSTER", "GETKEYSINSLOT", strconv.Itoa(slot), strconv.FormatInt(mine[slot], 10)}
	}
	res, err := st.Conns.MultiIn(ctx, m.Addr, db, gets)
	if err != nil {
		return err
	}
	exists := map[string][][]string{} // owner ID → EXISTS commands
	bySlot := map[string][]int{}
	for i, r := range res {
		keys, err := r.AsStrSlice()
		if err != nil {
			return fmt.Errorf("CLUSTER GETKEYSINSLOT %d on %s: %w", slots[i], m.Node.Name, err)
		}
		id := owner[slots[i]]
		exists[id] = append(exists[id], append([]string{"EXISTS"}, keys...))
		bySlot[id] = append(bySlot[id], slots[i])
	}
	for id, cmds := range exists {
		res, err := st.Conns.MultiIn(ctx, st.ByID[id].Addr, db, cmds)
		if err != nil {
			return err
		}
		for i, r := range res {
			n, err := r.AsInt64()
			if err != nil {
				return fmt.Errorf("EXISTS on %s: %w", st.ByID[id].Node.Name, err)
			}
			if missing := int64(len(cmds[i])-1) - n; missing > 0 {
				absent[bySlot[id][i]] = missing
			}
		}
	}
	return nil
}

// describeShortSlot names a slot whose owner lacks keys m holds.
func describeShortSlot(st *round.State, slot int, mine, theirs int64, id string) string {
	o := st.ByID[id]
	switch {
	case id == "":
		return fmt.Sprintf("slot %d: %d keys here, no owner", slot, mine)
	case o == nil:
		return fmt.Sprintf("slot %d: %d keys here, its owner %s unreachable", slot, mine, round.ShortID(id))
	}
	return fmt.Sprintf("slot %d: %d keys here, %d on its owner %s", slot, mine, theirs, o.Node.Name)
}

// slotOwnerIDs maps every slot to its owner in the seed's view ("" when unowned).
func slotOwnerIDs(st *round.State) map[int]string {
	out := make(map[int]string, planner.TotalSlots)
	for id, n := range st.View {
		if !n.Primary() {
			continue
		}
		for _, slot := range planner.ExpandSlots(n.Slots) {
			out[slot] = id
		}
	}
	return out
}

func allSlots() []int {
	out := make([]int, planner.TotalSlots)
	for i := range out {
		out[i] = i
	}
	return out
}
