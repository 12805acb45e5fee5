package e2e

import (
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// Status follows the servers, and failover timing. A 3 × 1 cluster under the acknowledged
// writer goes through a kill -9 of a primary, a kill -9 of a replica and a 30 s partition of
// a primary; each reports the time from the fault to Degraded=True (naming the node), from
// the fault to the replica's promotion (primary faults), the writer's longest gap, and from
// the end of the fault to Ready with Degraded False. Then both cores are kept busy for 90 s
// under the writer: no primary changes at the node timeout the operator sets (E2E_NODE_TIMEOUT,
// when set, is put in spec.config to measure another one).
var _ = Describe("Status follows the servers, and failover timing", Label("chaos"), Ordered, ContinueOnFailure, func() {
	var cluster *valkeyv1.ValkeyCluster

	BeforeAll(func() {
		ns := newNamespace("e2e-follow")
		cluster = buildCluster(ns, "follow", 3, 1, persistence("1Gi", expandableClass, valkeyv1.ReclaimDelete))
		if t := os.Getenv("E2E_NODE_TIMEOUT"); t != "" {
			cluster.Spec.Config = map[string]string{"cluster-node-timeout": t}
		}
		Expect(k8s.Create(ctx, cluster)).To(Succeed())
		waitReady(cluster, 6*time.Minute)
		expectClusterOK(cluster)
	})

	It("a primary's server killed with SIGKILL", func() {
		_, primary := replicaAndPrimary(cluster)
		followFault(cluster, "kill-primary", primary.Name, partner(cluster, primary).Name, func() { killServer(primary) })
	})

	It("a replica's server killed with SIGKILL", func() {
		replica, _ := replicaAndPrimary(cluster)
		followFault(cluster, "kill-replica", replica.Name, "", func() { killServer(replica) })
	})

	It("a primary cut off from every other pod for 30 s", func() {
		_, primary := replicaAndPrimary(cluster)
		_, id := containerState(getPod(primary), "valkey")
		followFault(cluster, "partition-primary-30s", primary.Name, partner(cluster, primary).Name, func() {
			out, err := localCluster("isolate", id, "30")
			Expect(err).NotTo(HaveOccurred(), out)
		})
	})

	It("keeps the primary through a 3 s script on it (a server stalled shorter than its node timeout is not failed over)", func() {
		before := primariesOf(cluster)
		_, primary := replicaAndPrimary(cluster)
		w := startAckWriter(cluster, "stall")
		Eventually(w.count).WithTimeout(time.Minute).Should(BeNumerically(">", 200), "the writer is under way")
		since := time.Now()
		vc := nodeClient(primary, password(cluster))
		err := vc.Do(ctx, vc.B().Eval().Script(busyScript).Numkeys(0).Arg("3000000").Build()).Error()
		vc.Close()
		Expect(err).NotTo(HaveOccurred(), "the script on %s", primary.Name)
		held := InterceptGomegaFailure(func() {
			Consistently(func() []string { return primariesOf(cluster) }).WithTimeout(15*time.Second).WithPolling(time.Second).
				Should(Equal(before), "the primaries after a 3 s stall")
		})
		gap := w.longestGap(since).Round(100 * time.Millisecond)
		acked, _ := w.stop()
		lost, unreadable := lostKeys(cluster, "stall", acked)
		line := fmt.Sprintf("node-timeout=%s held=%v primaries-after=%v acked=%d lost=%d longest-gap=%s",
			nodeTimeout(cluster), held == nil, primariesOf(cluster), len(acked), lost+unreadable, gap)
		GinkgoWriter.Printf("status script-stall-3s: %s\n", line)
		AddReportEntry("status script-stall-3s", line)
		Expect(lost + unreadable).To(BeZero())
		if os.Getenv("E2E_NODE_TIMEOUT") == "" {
			Expect(held).NotTo(HaveOccurred(), "no failover for a 3 s stall at the default node timeout")
		}
		waitReady(cluster, 2*time.Minute)
	})

	It("keeps every primary for 90 s with both cores busy under the writer", func() {
		before := primariesOf(cluster)
		w := startAckWriter(cluster, "busy")
		Eventually(w.count).WithTimeout(time.Minute).Should(BeNumerically(">", 200), "the writer is under way")
		stop := busyCores(2 * runtime.NumCPU())
		since := time.Now()
		held := InterceptGomegaFailure(func() {
			Consistently(func() []string { return primariesOf(cluster) }).WithTimeout(90*time.Second).WithPolling(2*time.Second).
				Should(Equal(before), "the primaries under load")
		})
		stop()
		gap := w.longestGap(since).Round(100 * time.Millisecond)
		acked, _ := w.stop()
		lost, unreadable := lostKeys(cluster, "busy", acked)
		line := fmt.Sprintf("node-timeout=%s primaries=%v held=%v acked=%d lost=%d longest-gap=%s",
			nodeTimeout(cluster), before, held == nil, len(acked), lost+unreadable, gap)
		GinkgoWriter.Printf("status busy-cores-90s: %s\n", line)
		AddReportEntry("status busy-cores-90s", line)
		Expect(held).NotTo(HaveOccurred(), "no failover with the cores busy")
		Expect(lost + unreadable).To(BeZero())
	})
})

// followFault runs fault under the writer and times what a user sees: Degraded=True naming
// node, the promotion of promoted (when set: the faulty primary's replica), the writer's
// longest gap, and Ready with Degraded False once the fault is over.
func followFault(c *valkeyv1.ValkeyCluster, name, node, promoted string, fault func()) {
	w := startAckWriter(c, name)
	Eventually(w.count).WithTimeout(time.Minute).Should(BeNumerically(">", 200), "the writer is under way")
	pw := password(c)
	since := time.Now()
	done := make(chan error, 1)
	go func() {
		defer GinkgoRecover()
		done <- InterceptGomegaFailure(fault)
	}()
	var degradedAfter, promotedAfter time.Duration
	var degraded string
	var faultErr error
	over := false
	for !over || degradedAfter == 0 {
		select {
		case faultErr = <-done:
			over = true
		case <-time.After(100 * time.Millisecond): // the polling period of the figures
		}
		if degradedAfter == 0 {
			if d := status.Get(getCluster(c).Status.Conditions, valkeyv1.ConditionDegraded); d != nil && d.Status == "True" && strings.Contains(d.Message, node) {
				degradedAfter, degraded = time.Since(since), d.Reason+": "+d.Message
			}
		}
		if promoted != "" && promotedAfter == 0 {
			if m, err := infoAt(ctx, podIPOf(c, promoted), pw, "replication", 300*time.Millisecond); err == nil && m["role"] == "master" {
				promotedAfter = time.Since(since)
			}
		}
		if over && degradedAfter == 0 && time.Since(since) > 2*time.Minute {
			break
		}
	}
	faultOver := time.Now()
	readyErr := InterceptGomegaFailure(func() {
		Eventually(func() string {
			vc := getCluster(c)
			return fmt.Sprintf("Ready=%v Degraded=%v", status.IsTrue(vc.Status.Conditions, valkeyv1.ConditionReady), status.IsTrue(vc.Status.Conditions, valkeyv1.ConditionDegraded))
		}).WithTimeout(5 * time.Minute).WithPolling(100 * time.Millisecond).Should(Equal("Ready=true Degraded=false"))
	})
	readyAfter := time.Since(faultOver)
	gap := w.longestGap(since).Round(100 * time.Millisecond)
	acked, _ := w.stop()
	lost, unreadable := lostKeys(c, name, acked)
	line := fmt.Sprintf("node-timeout=%s degraded-after=%s promoted-after=%s longest-gap=%s fault-lasted=%s ready-after=%s acked=%d lost=%d degraded=%q",
		nodeTimeout(c), roundMs(degradedAfter), roundMs(promotedAfter), gap, roundMs(faultOver.Sub(since)), roundMs(readyAfter), len(acked), lost+unreadable, degraded)
	GinkgoWriter.Printf("status %s: %s\n", name, line)
	AddReportEntry("status "+name, line)
	Expect(faultErr).NotTo(HaveOccurred(), "the fault")
	Expect(degradedAfter).NotTo(BeZero(), "Degraded=True naming %s", node)
	Expect(readyErr).NotTo(HaveOccurred(), "Ready and not Degraded after the fault")
	Expect(lost+unreadable).To(BeZero(), "acknowledged keys lost out of %d", len(acked))
	expectClusterOK(c)
	expectClusterCheck(c)
}

// primariesOf are the names of the nodes whose server is a primary, sorted.
func primariesOf(c *valkeyv1.ValkeyCluster) []string {
	pw := password(c)
	var out []string
	for _, n := range clusterNodes(c) {
		if m, err := infoAt(ctx, podIPOf(c, n.Name), pw, "replication", 2*time.Second); err == nil && m["role"] == "master" {
			out = append(out, n.Name)
		}
	}
	sort.Strings(out)
	return out
}

// podIPOf is the pod IP the node reports ("" while it has none).
func podIPOf(c *valkeyv1.ValkeyCluster, name string) string {
	n := nodeByName(c, name)
	if n.Status.Workload == nil {
		return ""
	}
	return n.Status.Workload.PodIP
}

// nodeTimeout is the cluster-node-timeout a server of c runs.
func nodeTimeout(c *valkeyv1.ValkeyCluster) string {
	n := clusterNodes(c)[0]
	vc := nodeClient(n, password(c))
	defer vc.Close()
	m, err := vc.Do(ctx, vc.B().ConfigGet().Parameter("cluster-node-timeout").Build()).AsStrMap()
	if err != nil {
		return "unknown: " + err.Error()
	}
	return m["cluster-node-timeout"] + "ms"
}

// busyCores keeps n goroutines spinning until the returned stop is called.
func busyCores(n int) (stop func()) {
	quit := make(chan struct{})
	for range n {
		go func() {
			for x := 0; ; x++ {
				if x%1_000_000 == 0 {
					select {
					case <-quit:
						return
					default:
					}
				}
			}
		}()
	}
	return func() { close(quit) }
}

// busyScript keeps the server busy for ARGV[1] microseconds (a long script, as a user's
// may be: the server answers nothing else meanwhile, the cluster bus included).
const busyScript = `local t = redis.call('TIME')
local start = t[1] * 1000000 + t[2]
while true do
  local n = redis.call('TIME')
  if n[1] * 1000000 + n[2] - start > tonumber(ARGV[1]) then return 1 end
end`

func roundMs(d time.Duration) time.Duration { return d.Round(100 * time.Millisecond) }
