package topologycontroller

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Rounds in a row that find Valkey converging look again sooner than resync-period:
// 0.5 s for ten rounds, then twice as long, at most 2 s; a converged round starts over.
func TestConvergeBookBacksOff(t *testing.T) {
	var b convergeBook
	var got []time.Duration
	for range 14 {
		got = append(got, b.next(types.UID("a"), 30*time.Second))
	}
	half := 500 * time.Millisecond
	want := []time.Duration{half, half, half, half, half, half, half, half, half, half, half, time.Second, 2 * time.Second, 2 * time.Second}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("delays %v, want %v", got, want)
		}
	}
	if d := b.next(types.UID("b"), 30*time.Second); d != 500*time.Millisecond {
		t.Errorf("another cluster starts at %s, want 500ms", d)
	}
	b.forget(types.UID("a"))
	if d := b.next(types.UID("a"), 30*time.Second); d != 500*time.Millisecond {
		t.Errorf("after converging: %s, want 500ms", d)
	}
	if d := b.next(types.UID("a"), 300*time.Millisecond); d != 300*time.Millisecond {
		t.Errorf("with a shorter resync-period: %s, want 300ms", d)
	}
}
