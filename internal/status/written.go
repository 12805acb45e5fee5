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
// cache lags the writes it will show, so a remembered share decides alone: the same share
// is not written again (this field manager is the only writer of its share, and its last
// write succeeded), a different one is written whatever the cache shows. Only an object
// this Applier has not written since it started (or since it forgot it) is judged by the
// cache: the share it shows was written by this field manager in an earlier process.
type written struct {
	mu   sync.Mutex
	last map[types.UID]uint64
	// objects serializes the write and the remembering of one object's share (by a stripe
	// of its UID): two reconcilers of one controller (a cluster round in flight and the
	// outside-cluster reconciler) writing the same node at once must remember the share
	// the API server kept last, not the one whose goroutine remembered last.
	objects [64]sync.Mutex
}

func newWritten() *written { return &written{last: map[types.UID]uint64{}} }

// lock holds the writes to uid until the returned function is called.
func (w *written) lock(uid types.UID) func() {
	if w == nil {
		return func() {}
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(uid))
	m := &w.objects[h.Sum32()%uint32(len(w.objects))]
	m.Lock()
	return m.Unlock
}

// recall tells whether something was remembered for uid, and whether it was fp.
func (w *written) recall(uid types.UID, fp uint64) (remembered, same bool) {
	if w == nil {
		return false, false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	last, ok := w.last[uid]
	return ok, ok && last == fp
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
