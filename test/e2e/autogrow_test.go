package e2e

import (
	"fmt"
	"sort"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// Volumes that never fill: a 3 × 1 cluster with persistence.autoGrow under the acknowledged
// writer (16 KiB random values, so the RDB is as large as the data): every claim grows
// before a write is refused; then at maxSize the volume fills, writes are refused with
// MISCONF (none lost), the node and the cluster say so, and raising maxSize recovers it.
var _ = Describe("Volumes grown before they fill", Label("autogrow"), Ordered, func() {
	var cluster *valkeyv1.ValkeyCluster
	var w *ackWriter
	var usage *usageLog

	BeforeAll(func() {
		ns := newNamespace("e2e-autogrow")
		p := persistence("300Mi", expandableClass, valkeyv1.ReclaimDelete)
		// A save every 10 s: the volume holds what was written within seconds.
		p.RDB = &valkeyv1.RDBSpec{SavePoints: []string{"10 1"}}
		p.AutoGrow = &valkeyv1.AutoGrowSpec{ThresholdPercent: 30, Increment: "100%", MaxSize: resource.MustParse("600Mi")}
		cluster = newCluster(ns, "grow", 3, 1, p)
		waitReady(cluster, 6*time.Minute)
		usage = startUsageLog(cluster)
		// About 3 MB/s in all, 1 MB/s per shard: the threshold is passed within a minute.
		w = startAckWriterSized(cluster, "grow", 16<<10, 5*time.Millisecond)
	})

	AfterAll(func() {
		if w != nil {
			w.stop()
		}
		if usage != nil {
			usage.stop()
			GinkgoWriter.Printf("usage over time (node: percent used of the file system, claim capacity):\n%s", usage)
		}
	})

	It("grows every claim past the threshold before any write is refused", func() {
		Eventually(func() int { return claimsAtLeast(cluster, "600Mi") }).WithTimeout(5*time.Minute).WithPolling(2*time.Second).
			Should(Equal(6), "every claim grown to 600Mi")
		Eventually(func() int { return grownInPod(cluster, 400<<20) }).WithTimeout(2*time.Minute).WithPolling(2*time.Second).
			Should(Equal(6), "the file system grown in every pod")
		w.mu.Lock()
		refused, acked := w.errs["MISCONF"], len(w.acked)
		w.mu.Unlock()
		GinkgoWriter.Printf("grown: %d keys acknowledged, %d writes refused with MISCONF\n", acked, refused)
		Expect(refused).To(BeZero(), "writes refused for lack of space before maxSize")
		for _, d := range growthTimes(cluster) {
			GinkgoWriter.Printf("threshold to grown file system: %s\n", d)
		}
		Expect(getCluster(cluster).Status.LargestVolume).To(Equal("600Mi"))
		Expect(getCluster(cluster).Status.GrownVolumes).To(BeEquivalentTo(6))
	})

	It("at maxSize says so, reports the full volume and refuses writes, losing none", func() {
		Eventually(func() []string { return clusterEventReasons(cluster) }).WithTimeout(3 * time.Minute).WithPolling(2 * time.Second).
			Should(ContainElement("Warning/AutoGrowLimitReached"))
		_, primary := replicaAndPrimary(cluster)
		pod := getPod(primary)
		out, err := kubectl("-n", cluster.Namespace, "exec", pod.Name, "-c", "valkey", "--", "kit", "fill", "/data/filler")
		Expect(err).NotTo(HaveOccurred(), out)
		Eventually(func() string { return nodeCondition(primary, valkeyv1.ConditionVolumeHealthy) }).WithTimeout(2 * time.Minute).WithPolling(time.Second).
			Should(Or(Equal("False/VolumeFull"), Equal("False/PersistenceFailing")))
		Eventually(func() string {
			c := status.Get(getCluster(cluster).Status.Conditions, valkeyv1.ConditionDegraded)
			if c == nil {
				return ""
			}
			return string(c.Status) + "/" + c.Reason + ": " + c.Message
			// The server refuses PING with MISCONF too, so its pod may turn not Ready and
			// Degraded say SlotsUnavailable first (it takes precedence); either way the
			// message names the node's volume, its usage and what to do.
		}).WithTimeout(time.Minute).WithPolling(time.Second).Should(And(HavePrefix("True/"),
			ContainSubstring(primary.Name+"'s volume is unhealthy"), ContainSubstring("raise spec.persistence.size")))
		Eventually(func() int { w.mu.Lock(); defer w.mu.Unlock(); return w.errs["MISCONF"] }).WithTimeout(2*time.Minute).WithPolling(time.Second).
			Should(BeNumerically(">", 0), "writes refused with MISCONF once a save fails")
		reportNode(cluster, primary.Name, "with its volume full at maxSize")
	})

	It("recovers when the user raises maxSize", func() {
		updateCluster(cluster, func(c *valkeyv1.ValkeyCluster) { c.Spec.Persistence.AutoGrow.MaxSize = resource.MustParse("1200Mi") })
		Eventually(func() int { return claimsAtLeast(cluster, "1200Mi") }).WithTimeout(3*time.Minute).WithPolling(2*time.Second).
			Should(BeNumerically(">=", 1), "the full claim grown")
		_, primary := replicaAndPrimary(cluster)
		Eventually(func() string { return nodeCondition(primary, valkeyv1.ConditionVolumeHealthy) }).WithTimeout(3 * time.Minute).WithPolling(time.Second).
			Should(Equal("True/Healthy"))
		before := w.count()
		Eventually(w.count).WithTimeout(time.Minute).Should(BeNumerically(">", before+100), "writes acknowledged again")
		acked, refused := w.stop()
		w = nil
		lost, unreadable := lostKeys(cluster, "grow", acked)
		GinkgoWriter.Printf("autogrow: acked=%d refused=%v lost=%d unreadable=%d\n", len(acked), refused, lost, unreadable)
		AddReportEntry("autogrow", fmt.Sprintf("acked=%d refused=%v lost=%d", len(acked), refused, lost))
		Expect(lost + unreadable).To(BeZero())
		waitReady(cluster, 3*time.Minute)
		expectClusterCheck(cluster)
	})
})

// claimsAtLeast counts the cluster's claims whose capacity is at least size.
func claimsAtLeast(c *valkeyv1.ValkeyCluster, size string) int {
	want := resource.MustParse(size)
	return countClaims(c, func(pvc *corev1.PersistentVolumeClaim) bool {
		got, ok := pvc.Status.Capacity[corev1.ResourceStorage]
		return ok && got.Cmp(want) >= 0
	})
}

// grownInPod counts the nodes whose measured file system is at least bytes.
func grownInPod(c *valkeyv1.ValkeyCluster, bytes int64) int {
	n := 0
	for _, node := range clusterNodes(c) {
		if v := node.Status.Volume; v != nil && v.Usage != nil && v.Usage.CapacityBytes >= bytes {
			n++
		}
	}
	return n
}

func nodeCondition(n valkeyv1.ValkeyNode, t string) string {
	cur := nodeByName(&valkeyv1.ValkeyCluster{ObjectMeta: n.ObjectMeta}, n.Name)
	cond := status.Get(cur.Status.Conditions, t)
	if cond == nil {
		return ""
	}
	return string(cond.Status) + "/" + cond.Reason
}

// clusterEventReasons lists Type/Reason of the events in the cluster's namespace.
func clusterEventReasons(c *valkeyv1.ValkeyCluster) []string {
	var list eventsv1.EventList
	Expect(k8s.List(ctx, &list, client.InNamespace(c.Namespace))).To(Succeed())
	var out []string
	for _, e := range list.Items {
		out = append(out, e.Type+"/"+e.Reason)
	}
	return out
}

// growthTimes is, per node, the time from its AutoGrowing event (the threshold passed) to its
// AutoGrown event (the claim's capacity reached: the file system grown online).
func growthTimes(c *valkeyv1.ValkeyCluster) []string {
	var list eventsv1.EventList
	Expect(k8s.List(ctx, &list, client.InNamespace(c.Namespace))).To(Succeed())
	start, end := map[string]time.Time{}, map[string]time.Time{}
	for _, e := range list.Items {
		at := e.EventTime.Time
		if at.IsZero() {
			at = e.CreationTimestamp.Time
		}
		switch e.Reason {
		case valkeyv1.EventAutoGrowing:
			if _, ok := start[e.Regarding.Name]; !ok || at.Before(start[e.Regarding.Name]) {
				start[e.Regarding.Name] = at
			}
		case valkeyv1.EventAutoGrown:
			if _, ok := end[e.Regarding.Name]; !ok || at.Before(end[e.Regarding.Name]) {
				end[e.Regarding.Name] = at
			}
		}
	}
	var out []string
	for n, s := range start {
		if e, ok := end[n]; ok {
			out = append(out, fmt.Sprintf("%s %s", n, e.Sub(s).Round(100*time.Millisecond)))
		}
	}
	sort.Strings(out)
	return out
}

// usageLog samples every node's published usage and claim capacity every 5 s.
type usageLog struct {
	lines []string
	stopc chan struct{}
	done  chan struct{}
}

func startUsageLog(c *valkeyv1.ValkeyCluster) *usageLog {
	u := &usageLog{stopc: make(chan struct{}), done: make(chan struct{})}
	begin := time.Now()
	go func() {
		defer GinkgoRecover()
		defer close(u.done)
		tick := time.NewTicker(5 * time.Second)
		defer tick.Stop()
		for {
			var parts []string
			var nodes valkeyv1.ValkeyNodeList
			if k8s.List(ctx, &nodes, client.InNamespace(c.Namespace)) == nil {
				for _, n := range nodes.Items {
					if v := n.Status.Volume; v != nil && v.Usage != nil {
						parts = append(parts, fmt.Sprintf("%s %d%% of %s", strings.TrimPrefix(n.Name, c.Name+"-"), v.Usage.Percent, v.Capacity))
					}
				}
			}
			sort.Strings(parts)
			u.lines = append(u.lines, fmt.Sprintf("%4.0fs  %s", time.Since(begin).Seconds(), strings.Join(parts, " | ")))
			select {
			case <-u.stopc:
				return
			case <-tick.C:
			}
		}
	}()
	return u
}

func (u *usageLog) stop() { close(u.stopc); <-u.done }

func (u *usageLog) String() string { return strings.Join(u.lines, "\n") + "\n" }
