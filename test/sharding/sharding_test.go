package sharding_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/partition"
	"valkey.io/operator/topologycontroller"
)

// Short Lease timings keep the hand-over within seconds. The retry period is long next to
// the margin: a loop that notices renewals only on its rounds sees the last one up to a
// period late, and acts on an expiry up to a period late, so it misses the bound.
const (
	leaseDuration = 8 * time.Second
	renewDeadline = 6 * time.Second
	retryPeriod   = 5 * time.Second
	clusters      = 12
	// margin is the hand-over's allowance beyond the lease duration: a watch event, a list
	// and a few updates on a loaded machine (up to 2.89 s seen with the other suites
	// compiling and running alongside); three quarters of a retry period, against a mean of
	// one period late for a loop that works in rounds.
	margin = retryPeriod * 3 / 4
)

// restartDelay is how long after its crash a replica comes back under a new identity, as a
// container restarted by the kubelet does (seconds): longer than the margin, so a restarted
// replica that waited to see a Lease unchanged for a lease duration itself would miss the bound.
const restartDelay = 5 * time.Second

var _ = Describe("Two topology managers with partitioned leases", func() {
	It("never reconcile one cluster at once, share the clusters, and hand a dead one's over within a lease period", func() {
		f := startTwo()
		c := f.crashA()

		By("replica-b reconciles replica-a's clusters within a lease period and one round of the queue")
		f.expectHandedOver(c, "replica-b")
		Eventually(leaseHolders(f.leaseNS)).Should(HaveEach("replica-b"))
	})

	It("hand a crashed replica's clusters over a lease period after its last renewal when it restarts, though the survivor is at its share", func() {
		f := startTwo()
		c := f.crashA()

		By("replica-a comes back as replica-a2 (a container restart: a new identity) while its Leases have not expired")
		<-time.After(restartDelay)
		a2 := startManager(f.rec, f.leaseNS, "replica-a2")
		DeferCleanup(a2.stop)

		By("replica-b, at its share of two replicas, frees the expired Leases and replica-a2 takes them at once")
		f.expectHandedOver(c, "replica-b", "replica-a2")
		Eventually(func() map[int]bool { return partitionsOf(f.leaseNS, "replica-a2") }).ShouldNot(BeEmpty(), "replica-a2 holds its share")
	})
})

// two is a pair of managers sharing the partitions of the spec's ValkeyClusters.
type two struct {
	leaseNS string
	rec     *recorder
	a, b    *manager
	keys    []string
}

// startTwo starts replica-a and replica-b, creates the clusters, and waits until both
// reconcile a share of them and every partition is held.
func startTwo() *two {
	f := &two{rec: newRecorder()}
	f.leaseNS = newNamespace("valkey-system-")
	ns := newNamespace("sharding-")
	f.a = startManager(f.rec, f.leaseNS, "replica-a")
	f.b = startManager(f.rec, f.leaseNS, "replica-b")
	DeferCleanup(f.a.stop)
	DeferCleanup(f.b.stop)
	for i := range clusters {
		f.keys = append(f.keys, createCluster(ns, fmt.Sprintf("c%02d", i)))
	}

	By("both managers reconcile, each a share of the clusters, never one cluster at once")
	Eventually(func(g Gomega) {
		ca, cb := f.rec.Clusters("replica-a"), f.rec.Clusters("replica-b")
		g.Expect(ca).NotTo(BeEmpty())
		g.Expect(cb).NotTo(BeEmpty())
		g.Expect(append(ca, cb...)).To(ContainElements(f.keys))
	}).Should(Succeed())
	Expect(f.rec.Overlaps()).To(BeEmpty())
	Eventually(leaseHolders(f.leaseNS)).Should(SatisfyAll(
		HaveLen(*partitions), ContainElement("replica-a"), ContainElement("replica-b")))
	return f
}

// crash is replica-a's crash: what it held, when it stopped, and its last renewals.
type crash struct {
	held        map[int]bool
	stopped     time.Time
	lastRenewed map[string]time.Time
}

// crashA stops replica-a without releasing its Leases, as a crash does.
func (f *two) crashA() crash {
	By("replica-a stops without releasing its leases, as a crash does")
	held := partitionsOf(f.leaseNS, "replica-a")
	Expect(held).NotTo(BeEmpty())
	f.a.stop()
	return crash{held: held, stopped: time.Now(), lastRenewed: renewTimes(f.leaseNS, "replica-a")}
}

// expectHandedOver checks that replica-a's clusters are reconciled again by one of takers
// and its Leases taken by them, a lease duration after its last renewal plus the margin.
func (f *two) expectHandedOver(c crash, takers ...string) {
	var moved []string
	for _, key := range f.keys {
		if c.held[partition.Of(key, *partitions)] {
			moved = append(moved, key)
		}
	}
	Expect(moved).NotTo(BeEmpty())
	first := func(key string) time.Time {
		var t time.Time
		for _, by := range takers {
			if s := f.rec.FirstSince(by, key, c.stopped); !s.IsZero() && (t.IsZero() || s.Before(t)) {
				t = s
			}
		}
		return t
	}
	Eventually(func(g Gomega) {
		for _, key := range moved {
			g.Expect(first(key)).NotTo(BeZero(), key)
		}
	}).WithTimeout(leaseDuration + 2*retryPeriod + 2*time.Second).Should(Succeed())
	var slowest time.Duration
	for _, key := range moved {
		slowest = max(slowest, first(key).Sub(c.stopped))
	}
	GinkgoWriter.Printf("hand-over: %d clusters of %d partitions, the last reconciled by %v %s after replica-a stopped (lease duration %s)\n",
		len(moved), len(c.held), takers, slowest.Round(time.Millisecond), leaseDuration)
	Eventually(leaseHolders(f.leaseNS)).Should(HaveEach(BeElementOf(takers)))
	// replica-a died after its last renewal of any of its Leases (partitions and member):
	// the others see each renewal by their watch and wake when the Lease expires by their
	// own clock, so it is taken a lease duration after that renewal, plus the latency of a
	// watch event, a list and an update or two (margin), not at a later round.
	gap := handoverGap(f.leaseNS, c.lastRenewed)
	GinkgoWriter.Printf("hand-over: %v acquired replica-a's Leases at most %s after its last renewal (lease duration %s)\n",
		takers, gap.Round(time.Millisecond), leaseDuration)
	Expect(gap).To(BeNumerically("<=", leaseDuration+margin))
	// Its member Lease goes with its partitions, not two lease durations later: the others
	// stop counting it alive at once, and no partition moves back and forth meanwhile.
	Eventually(memberHolders(f.leaseNS)).WithTimeout(retryPeriod).ShouldNot(ContainElement("replica-a"))
	Expect(f.rec.Overlaps()).To(BeEmpty())
}

// memberHolders lists the replicas whose member Lease exists.
func memberHolders(ns string) func() []string {
	return func() []string {
		var list coordinationv1.LeaseList
		Expect(k8s.List(context.Background(), &list, client.InNamespace(ns),
			client.MatchingLabels{partition.LabelSet: topologycontroller.Name, partition.LabelRole: partition.RoleMember})).To(Succeed())
		var out []string
		for _, l := range list.Items {
			if l.Spec.HolderIdentity != nil {
				out = append(out, *l.Spec.HolderIdentity)
			}
		}
		return out
	}
}

// manager is one topology manager running in this process.
type manager struct {
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

// startManager starts a topology manager named identity whose cluster reconciles rec sees.
func startManager(rec *recorder, leaseNS, identity string) *manager {
	return startManagerWith(rec, leaseNS, identity, *partitions)
}

// startManagerWith starts a topology manager with count partitions.
func startManagerWith(rec *recorder, leaseNS, identity string, count int) *manager {
	m, err := env.NewManager(topologycontroller.CacheOptions())
	Expect(err).NotTo(HaveOccurred())
	opts := topologycontroller.Options{
		DialTimeout:  200 * time.Millisecond,
		ResyncPeriod: time.Second,
		PartitionOptions: topologycontroller.PartitionOptions{
			Partitions:             count,
			PartitionNamespace:     leaseNS,
			Identity:               identity,
			PartitionLeaseDuration: leaseDuration,
			PartitionRenewDeadline: renewDeadline,
			PartitionRetryPeriod:   retryPeriod,
			PartitionKeepOnStop:    true,
		},
		Middleware: rec.middleware(identity),
	}
	Expect(topologycontroller.SetupWithManager(m, opts)).To(Succeed())
	ctx, cancel := context.WithCancel(context.Background())
	rm := &manager{cancel: cancel, done: make(chan error, 1)}
	go func() {
		defer GinkgoRecover()
		rm.done <- m.Start(ctx)
	}()
	return rm
}

// stop stops the manager and waits until it has returned.
func (m *manager) stop() {
	m.once.Do(func() {
		m.cancel()
		Eventually(m.done).Should(Receive(Not(HaveOccurred())))
	})
}

func newNamespace(prefix string) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}
	Expect(k8s.Create(context.Background(), ns)).To(Succeed())
	return ns.Name
}

// createCluster creates a ValkeyCluster of one shard (no pods run: its reconciles create
// its ValkeyNodes and wait for their pods) and returns its key.
func createCluster(ns, name string) string {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": valkeyv1.GroupVersion.String(),
		"kind":       "ValkeyCluster",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec":       map[string]any{"shards": int64(1), "replicas": int64(0)},
	}}
	ExpectWithOffset(1, k8s.Create(context.Background(), u)).To(Succeed())
	return client.ObjectKey{Namespace: ns, Name: name}.String()
}

// leaseHolders lists the holders of the partition Leases.
func leaseHolders(ns string) func() []string {
	return func() []string {
		var out []string
		for _, l := range partitionLeases(ns) {
			if l.Spec.HolderIdentity != nil {
				out = append(out, *l.Spec.HolderIdentity)
			}
		}
		return out
	}
}

// partitionsOf is the set of partitions whose Lease identity holds.
func partitionsOf(ns, identity string) map[int]bool {
	out := map[int]bool{}
	for _, l := range partitionLeases(ns) {
		if l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == identity {
			var p int
			_, err := fmt.Sscanf(l.Name, topologycontroller.Name+"-p%d", &p)
			Expect(err).NotTo(HaveOccurred())
			out[p] = true
		}
	}
	return out
}

func partitionLeases(ns string) []coordinationv1.Lease {
	var list coordinationv1.LeaseList
	Expect(k8s.List(context.Background(), &list, client.InNamespace(ns),
		client.MatchingLabels{partition.LabelSet: topologycontroller.Name, partition.LabelRole: partition.RolePartition})).To(Succeed())
	return list.Items
}

// renewTimes are the last renewals of the Leases identity holds (partitions and member).
func renewTimes(ns, identity string) map[string]time.Time {
	var list coordinationv1.LeaseList
	Expect(k8s.List(context.Background(), &list, client.InNamespace(ns),
		client.MatchingLabels{partition.LabelSet: topologycontroller.Name})).To(Succeed())
	out := map[string]time.Time{}
	for _, l := range list.Items {
		if l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == identity {
			out[l.Name] = l.Spec.RenewTime.Time
		}
	}
	return out
}

// handoverGap is the longest time from the dead holder's last renewal of any of its Leases
// (lastRenewed: it died after it) to the acquisition of one of its partition Leases by the
// next holder; every partition Lease in lastRenewed must have been taken.
func handoverGap(ns string, lastRenewed map[string]time.Time) time.Duration {
	var last time.Time
	for _, t := range lastRenewed {
		if t.After(last) {
			last = t
		}
	}
	var gap time.Duration
	for _, l := range partitionLeases(ns) {
		if _, ok := lastRenewed[l.Name]; ok {
			Expect(l.Spec.AcquireTime.Time.After(last)).To(BeTrue(), "%s acquired after the last renewal", l.Name)
			gap = max(gap, l.Spec.AcquireTime.Sub(last))
		}
	}
	return gap
}
