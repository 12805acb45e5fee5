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
	retryPeriod   = 3 * time.Second
	clusters      = 12
	// margin is the hand-over's allowance beyond the lease duration: a watch event, a list
	// and a few updates on a loaded machine (up to 1.93 s seen in a CI run, with the other
	// suites running alongside); three quarters of a retry period, against a mean of one
	// period late for a loop that works in rounds.
	margin = retryPeriod * 3 / 4
)

var _ = Describe("Two topology managers with partitioned leases", func() {
	It("never reconcile one cluster at once, share the clusters, and hand a dead one's over within a lease period", func() {
		leaseNS, ns := newNamespace("valkey-system-"), newNamespace("sharding-")
		rec := newRecorder()
		a := startManager(rec, leaseNS, "replica-a")
		b := startManager(rec, leaseNS, "replica-b")
		DeferCleanup(a.stop)
		DeferCleanup(b.stop)
		var keys []string
		for i := range clusters {
			keys = append(keys, createCluster(ns, fmt.Sprintf("c%02d", i)))
		}

		By("both managers reconcile, each a share of the clusters, never one cluster at once")
		Eventually(func(g Gomega) {
			ca, cb := rec.Clusters("replica-a"), rec.Clusters("replica-b")
			g.Expect(ca).NotTo(BeEmpty())
			g.Expect(cb).NotTo(BeEmpty())
			g.Expect(append(ca, cb...)).To(ContainElements(keys))
		}).Should(Succeed())
		Expect(rec.Overlaps()).To(BeEmpty())
		Eventually(leaseHolders(leaseNS)).Should(SatisfyAll(
			HaveLen(*partitions), ContainElement("replica-a"), ContainElement("replica-b")))

		By("replica-a stops without releasing its leases, as a crash does")
		held := partitionsOf(leaseNS, "replica-a")
		Expect(held).NotTo(BeEmpty())
		a.stop()
		stopped := time.Now()
		lastRenewed := renewTimes(leaseNS, "replica-a")

		By("replica-b reconciles replica-a's clusters within a lease period and one round of the queue")
		var moved []string
		for _, key := range keys {
			if held[partition.Of(key, *partitions)] {
				moved = append(moved, key)
			}
		}
		Expect(moved).NotTo(BeEmpty())
		Eventually(func(g Gomega) {
			for _, key := range moved {
				g.Expect(rec.FirstSince("replica-b", key, stopped)).NotTo(BeZero(), key)
			}
		}).WithTimeout(leaseDuration + 2*retryPeriod + 2*time.Second).Should(Succeed())
		var slowest time.Duration
		for _, key := range moved {
			slowest = max(slowest, rec.FirstSince("replica-b", key, stopped).Sub(stopped))
		}
		GinkgoWriter.Printf("hand-over: %d clusters of %d partitions, the last reconciled by replica-b %s after replica-a stopped (lease duration %s)\n",
			len(moved), len(held), slowest.Round(time.Millisecond), leaseDuration)
		Eventually(leaseHolders(leaseNS)).Should(HaveEach("replica-b"))
		// replica-a died after its last renewal of any of its Leases (partitions and member):
		// replica-b sees each renewal by its watch and wakes when the Lease expires by its own
		// clock, so it takes them a lease duration after that renewal, plus the latency of a
		// watch event, a list and an update (margin), not at its next round.
		gap := handoverGap(leaseNS, lastRenewed)
		GinkgoWriter.Printf("hand-over: replica-b acquired replica-a's Leases at most %s after its last renewal (lease duration %s)\n", gap.Round(time.Millisecond), leaseDuration)
		Expect(gap).To(BeNumerically("<=", leaseDuration+margin))
		Expect(rec.Overlaps()).To(BeEmpty())
	})
})

// manager is one topology manager running in this process.
type manager struct {
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

// startManager starts a topology manager named identity whose cluster reconciles rec sees.
func startManager(rec *recorder, leaseNS, identity string) *manager {
	m, err := env.NewManager(topologycontroller.CacheOptions())
	Expect(err).NotTo(HaveOccurred())
	opts := topologycontroller.Options{
		DialTimeout:  200 * time.Millisecond,
		ResyncPeriod: time.Second,
		PartitionOptions: topologycontroller.PartitionOptions{
			Partitions:             *partitions,
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
