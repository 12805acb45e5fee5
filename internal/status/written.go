package status

import (
	"encoding/json"
	"hash/fnv"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// maxWritten bounds the memory of an Applier: past it, the memory starts again empty (an
// object it forgot is judged by the cache alone until it is written again).
const maxWritten = 100_000

// written remembers, per object UID, a fingerprint of the status share last written. A
// cache lags the writes it will show: a status read back unchanged from the cache is only
// trusted when it is also what was last written (or nothing was written since start).
type written struct {
	mu   sync.Mutex
	last map[types.UID]uint64
}

func newWritten() *written { return &written{last: map[types.UID]uint64{}} }

// matches tells whether fp is what was last written to uid, or nothing was remembered.
func (w *written) matches(uid types.UID, fp uint64) bool {
	if w == nil {
		return true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	last, ok := w.last[uid]
	return !ok || last == fp
}

func (w *written) remember(uid types.UID, fp uint64) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.last) >= maxWritten {
		w.last = map[types.UID]uint64{}
	}
	w.last[uid] = fp
}

func (w *written) forget(uid types.UID) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.last, uid)
}

// fingerprint hashes a status share and the generation it is written for (conditions
// carry no timestamps yet).
func fingerprint(generation int64, share any) uint64 {
	b, err := json.Marshal(struct {
		G int64
		S any
	}{generation, share})
	if err != nil {
		return 0 // not reached: a share is plain data
	}
	h := fnv.New64a()
	_, _ = h.Write(b)
	return h.Sum64()
}
