package serverwatch

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"valkey.io/operator/test/valkeyserver"
	"valkey.io/operator/topologycontroller/round"
)

// TestWatcherWakesOnChange runs the watcher against two real cluster-mode servers: it wakes
// nothing while they stay as they are, and wakes the cluster's reconcile within a couple of
// intervals when a server's view changes (slots assigned) and when the server asked first
// stops answering, once each.
func TestWatcherWakesOnChange(t *testing.T) {
	a := startServer(t)
	b := startServer(t)
	interval := 100 * time.Millisecond
	w := New(interval, time.Minute, interval, interval)
	key := types.NamespacedName{Namespace: "ns", Name: "c"}
	w.Watch(key, Target{Addrs: []string{a.Addr(), b.Addr()}, Creds: round.Credentials{}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = w.Start(ctx) }()

	sent := round.CommandsSent.Load()
	expectNoWake(t, w, 5*interval)
	if looks := w.Looks.Load(); looks < 2 {
		t.Fatalf("%d looks in 5 intervals, want several", looks)
	}
	if n := round.CommandsSent.Load() - sent; n != 0 {
		t.Errorf("the watcher's looks counted as %d commands of reconciles", n)
	}

	cs := round.NewConns(round.Credentials{}, time.Second, time.Second)
	defer cs.Close()
	if err := cs.OK(ctx, a.Addr(), "CLUSTER", "ADDSLOTSRANGE", "0", "99"); err != nil {
		t.Fatal(err)
	}
	expectWake(t, w, key, 5*interval, "slots assigned on the server asked")
	expectNoWake(t, w, 5*interval)

	if err := a.Kill(); err != nil {
		t.Fatal(err)
	}
	expectWake(t, w, key, 5*interval, "the server asked first killed")
	expectNoWake(t, w, 5*interval)

	w.Forget(key)
	looks := w.Looks.Load()
	time.Sleep(3 * interval) // nothing to wait for: the watcher must stay idle
	if got := w.Looks.Load(); got != looks {
		t.Errorf("%d looks after the cluster was forgotten", got-looks)
	}
}

func startServer(t *testing.T) *valkeyserver.Server {
	t.Helper()
	s, err := valkeyserver.Start(valkeyserver.Options{Cluster: true, Dir: t.TempDir()})
	if err != nil {
		t.Skipf("no Valkey server: %v", err)
	}
	t.Cleanup(func() { _ = s.Kill() })
	return s
}

func expectWake(t *testing.T, w *Watcher, key types.NamespacedName, within time.Duration, what string) {
	t.Helper()
	select {
	case e := <-w.wake:
		if e.Object.GetNamespace() != key.Namespace || e.Object.GetName() != key.Name {
			t.Fatalf("%s: woke %s/%s, want %s", what, e.Object.GetNamespace(), e.Object.GetName(), key)
		}
	case <-time.After(within):
		t.Fatalf("%s: no wake within %s", what, within)
	}
}

func expectNoWake(t *testing.T, w *Watcher, during time.Duration) {
	t.Helper()
	select {
	case e := <-w.wake:
		t.Fatalf("woke %s/%s with nothing changed", e.Object.GetNamespace(), e.Object.GetName())
	case <-time.After(during):
	}
}

// TestWatcherTargetsChangeWhileLooking registers, re-targets and forgets clusters from other
// goroutines while the watcher looks at them (run with -race): a new target starts afresh
// (no wake for the servers it now asks), and nothing is used after it was closed.
func TestWatcherTargetsChangeWhileLooking(t *testing.T) {
	a := startServer(t)
	b := startServer(t)
	interval := 20 * time.Millisecond
	// Looks every 20 ms, but waits for the servers as long as a loaded machine needs: a look
	// that times out reads as a server that changed (it stopped answering) and wakes.
	w := New(interval, time.Minute, time.Second, time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = w.Start(ctx) }()
	done := time.Now().Add(time.Second)
	for i := 0; time.Now().Before(done); i++ {
		key := types.NamespacedName{Namespace: "ns", Name: fmt.Sprint("c", i%4)}
		addrs := []string{a.Addr(), b.Addr()}
		if i%2 == 1 {
			addrs = []string{b.Addr(), a.Addr()}
		}
		if i%7 == 0 {
			w.Forget(key)
		} else {
			w.Watch(key, Target{Addrs: addrs})
		}
		time.Sleep(3 * time.Millisecond) // the pace of the registrations, not a wait
	}
	select {
	case e := <-w.wake:
		t.Errorf("woke %s with nothing changed on the servers", e.Object.GetName())
	default:
	}
	if w.Looks.Load() == 0 {
		t.Error("no look while clusters were registered")
	}
}
