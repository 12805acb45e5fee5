package e2e

import (
	"context"
	cryptorand "crypto/rand"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/valkey-io/valkey-go"
	appsv1 "k8s.io/api/apps/v1"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// Scale-out 3 → 4 shards and back to 3 under a writer whose keys count only once a replica
// has them (WAIT 1): slots move (atomically on Valkey 9 unless the topology controller runs
// with --migration-mode=keys), nothing acknowledged is lost, and clients never see ASK or
// TRYAGAIN on the atomic path.
var _ = Describe("Scaling shards out and in under acknowledged writes", Ordered, func() {
	var (
		cluster *valkeyv1.ValkeyCluster
		atomic  bool
	)

	BeforeAll(func() {
		atomic = !strings.Contains(topologyArgs(), "--migration-mode=keys")
		cluster = newCluster(newNamespace("e2e-migrate"), "scale", 3, 1, nil)
		waitReady(cluster, 6*time.Minute)
		writeKeys(cluster, "base", 5000)
	})

	for _, step := range []struct {
		name     string
		from, to int32
	}{{"out", 3, 4}, {"in", 4, 3}} {
		It(fmt.Sprintf("scales %s from %d to %d shards: 0 acknowledged keys lost, no ASK or TRYAGAIN", step.name, step.from, step.to), func() {
			w := startAckWriter(cluster, "scale-"+step.name)
			Eventually(w.count).WithTimeout(time.Minute).Should(BeNumerically(">", 200), "the writer is under way")
			since := time.Now()
			updateCluster(cluster, func(c *valkeyv1.ValkeyCluster) { c.Spec.Shards = step.to })
			waitReady(cluster, 8*time.Minute)
			ready := time.Since(since)
			acked, errs := w.stop()
			took := migrationTime(cluster, since)
			GinkgoWriter.Printf("scale-%s %d→%d (atomic=%v): migration %s, Ready after %s; %d writes acknowledged by a replica, refused: %v\n",
				step.name, step.from, step.to, atomic, took, ready.Round(time.Second), len(acked), errs)
			AddReportEntry("scale-"+step.name, fmt.Sprintf("atomic=%v migration=%s ready=%s acked=%d refused=%v", atomic, took, ready.Round(time.Second), len(acked), errs))
			expectKeys(cluster, "scale-"+step.name, acked)
			expectKeys(cluster, "base", seq(5000))
			if atomic {
				Expect(errs).NotTo(HaveKey("ASK"), "no ASK redirection on the atomic path")
				Expect(errs).NotTo(HaveKey("TRYAGAIN"), "no TRYAGAIN on the atomic path")
			}
			Expect(clusterNodes(cluster)).To(HaveLen(int(2 * step.to)))
			expectClusterOK(cluster)
			expectClusterCheck(cluster)
		})
	}

	It("hands a deleted primary's slots to its replica before the server stops: 0 acknowledged keys lost", func() {
		replica, primary := replicaAndPrimary(cluster)
		w := startAckWriter(cluster, "handover")
		Eventually(w.count).WithTimeout(time.Minute).Should(BeNumerically(">", 200), "the writer is under way")
		since := time.Now()
		replacePod(primary, 3*time.Minute)
		Eventually(func() valkeyv1.Role {
			n := nodeByName(cluster, replica.Name)
			if n.Status.Topology == nil {
				return ""
			}
			return n.Status.Topology.Role
		}).WithTimeout(time.Minute).Should(Equal(valkeyv1.RolePrimary), "%s took over from %s", replica.Name, primary.Name)
		waitReady(cluster, 4*time.Minute)
		acked, errs := w.stop()
		GinkgoWriter.Printf("primary %s deleted: Ready again after %s; %d writes acknowledged by a replica, refused: %v\n",
			primary.Name, time.Since(since).Round(time.Second), len(acked), errs)
		AddReportEntry("primary-deleted", fmt.Sprintf("acked=%d refused=%v", len(acked), errs))
		expectKeys(cluster, "handover", acked)
		expectKeys(cluster, "base", seq(5000))
		expectClusterOK(cluster)
		expectClusterCheck(cluster)
	})
})

// topologyArgs are the topology controller's container arguments.
func topologyArgs() string {
	var d appsv1.Deployment
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: "valkey-topology-controller"}, &d)).To(Succeed())
	var args []string
	for _, c := range d.Spec.Template.Spec.Containers {
		args = append(args, c.Args...)
	}
	return strings.Join(args, " ")
}

// migrationTime is the time from the first Migrating event to the Migrated event of the
// cluster after since. Events are written asynchronously, after the status that says Ready:
// they are waited for.
func migrationTime(c *valkeyv1.ValkeyCluster, since time.Time) time.Duration {
	var took time.Duration
	EventuallyWithOffset(1, func(g Gomega) {
		var list eventsv1.EventList
		g.Expect(k8s.List(ctx, &list, client.InNamespace(c.Namespace))).To(Succeed())
		var start, end time.Time
		for _, e := range list.Items {
			at := e.EventTime.Time
			if e.Regarding.Kind != "ValkeyCluster" || e.Regarding.Name != c.Name || at.Before(since.Truncate(time.Second)) {
				continue
			}
			switch e.Reason {
			case valkeyv1.EventMigrating:
				if start.IsZero() || at.Before(start) {
					start = at
				}
			case valkeyv1.EventMigrated:
				if at.After(end) {
					end = at
				}
			}
		}
		g.Expect(start.IsZero() || end.IsZero()).To(BeFalse(), "Migrating and Migrated events after %s", since)
		took = end.Sub(start).Round(time.Millisecond)
	}).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())
	return took
}

// expectClusterCheck runs valkey-cli --cluster check in a pod of the cluster and expects it
// clean: every slot covered, no open slot, every node agreeing.
func expectClusterCheck(c *valkeyv1.ValkeyCluster) {
	n := clusterNodes(c)[0]
	out, err := kubectl("-n", c.Namespace, "exec", n.Status.Workload.PodName, "-c", "valkey", "--",
		"valkey-cli", "--user", valkeyv1.OperatorUser, "--cluster", "check", "127.0.0.1:6379")
	ExpectWithOffset(1, err).NotTo(HaveOccurred(), out)
	ExpectWithOffset(1, out).To(ContainSubstring("[OK] All 16384 slots covered."), out)
	ExpectWithOffset(1, out).NotTo(ContainSubstring("[WARNING]"), out)
	ExpectWithOffset(1, out).NotTo(ContainSubstring("[ERR]"), out)
}

// ackWriter writes keys continuously and counts a key as acknowledged only once WAIT 1
// returned at least 1 on the connection that wrote it. A refused write is tried again
// (MOVED, ASK and TRYAGAIN included: the writer is its own redirect-following client, so it
// sees every one) and counted by the first word of its error.
type ackWriter struct {
	mu      sync.Mutex
	acked   []int
	ackedAt []time.Time // ackedAt[k]: when acked[k] was acknowledged
	errs    map[string]int
	// pad, when set, is random data a value carries after "<i>:" (see value).
	pad     []byte
	padSize int
	// every, when set, is the least time between two writes (a steady rate).
	every  time.Duration
	cancel context.CancelFunc
	done   chan struct{}
}

var errNotReplicated = errors.New("NOTREPLICATED WAIT 1 returned 0")

func startAckWriter(c *valkeyv1.ValkeyCluster, prefix string) *ackWriter {
	return startAckWriterSized(c, prefix, 0, 0)
}

// startAckWriterSized is startAckWriter with values of about size bytes: "<i>:" and random
// bytes (incompressible, so the servers' saves are as large as the data).
func startAckWriterSized(c *valkeyv1.ValkeyCluster, prefix string, size int, every time.Duration) *ackWriter {
	vc := ackClient(c)
	wctx, cancel := context.WithCancel(ctx)
	w := &ackWriter{errs: map[string]int{}, cancel: cancel, done: make(chan struct{}), padSize: size, every: every}
	if size > 0 {
		w.pad = make([]byte, 1<<20)
		_, _ = cryptorand.Read(w.pad)
	}
	go func() {
		defer GinkgoRecover()
		defer close(w.done)
		defer vc.Close()
		for i := 0; wctx.Err() == nil; i++ {
			next := time.Now().Add(w.every)
			w.write(wctx, vc, fmt.Sprintf("%s-%d", prefix, i), i)
			if wait := time.Until(next); wait > 0 {
				time.Sleep(wait) // the writer's steady rate, not a wait for a state
			}
		}
	}()
	return w
}

// write tries one key until a replica acknowledges it (or the writer stops).
func (w *ackWriter) write(ctx context.Context, vc valkey.Client, key string, i int) {
	for ctx.Err() == nil {
		err := vc.Dedicated(func(d valkey.DedicatedClient) error {
			octx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			res := d.DoMulti(octx, d.B().Set().Key(key).Value(w.value(i)).Build(), d.B().Wait().Numreplicas(1).Timeout(1000).Build())
			if err := res[0].Error(); err != nil {
				return err
			}
			n, err := res[1].AsInt64()
			if err == nil && n < 1 {
				err = errNotReplicated
			}
			return err
		})
		w.mu.Lock()
		if err == nil {
			w.acked = append(w.acked, i)
			w.ackedAt = append(w.ackedAt, time.Now())
			w.mu.Unlock()
			return
		}
		if ctx.Err() == nil {
			word, _, _ := strings.Cut(err.Error(), " ")
			w.errs[word]++
		}
		w.mu.Unlock()
		time.Sleep(20 * time.Millisecond) // pacing the retries of a refused write
	}
}

// value is key i's value: its number, and with a pad "<i>:" and padSize random bytes.
func (w *ackWriter) value(i int) string {
	if w.padSize == 0 {
		return strconv.Itoa(i)
	}
	at := (i * 7919) % (len(w.pad) - w.padSize)
	return strconv.Itoa(i) + ":" + string(w.pad[at:at+w.padSize])
}

// count is the number of keys acknowledged so far.
func (w *ackWriter) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.acked)
}

// ackedBefore is the keys acknowledged before t.
func (w *ackWriter) ackedBefore(t time.Time) []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []int
	for k, at := range w.ackedAt {
		if at.Before(t) {
			out = append(out, w.acked[k])
		}
	}
	return out
}

// longestGap is the longest time without an acknowledgement since start (from start to the
// first one after it, between two, and from the last to now): how long writing stood still.
func (w *ackWriter) longestGap(start time.Time) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	var gap time.Duration
	last := start
	for _, at := range append(slices.Clone(w.ackedAt), time.Now()) {
		if at.Before(start) {
			continue
		}
		gap = max(gap, at.Sub(last))
		last = at
	}
	return gap
}

// stop ends the writer and returns the acknowledged key numbers and the refusals by kind.
func (w *ackWriter) stop() ([]int, map[string]int) {
	w.cancel()
	<-w.done
	acked := slices.Clone(w.acked)
	sort.Ints(acked)
	return acked, w.errs
}

// ackClient is a cluster client that does not retry by itself: a refused write comes back
// to the writer, which counts it and tries again on a fresh connection to the slot's owner.
func ackClient(c *valkeyv1.ValkeyCluster) valkey.Client {
	vc, err := valkey.NewClient(valkey.ClientOption{
		InitAddress: podAddrs(c), Password: password(c), DisableCache: true, DisableRetry: true,
		ConnWriteTimeout: 5 * time.Second, TLSConfig: clientTLS(c),
	})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return vc
}
