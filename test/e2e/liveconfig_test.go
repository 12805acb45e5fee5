package e2e

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// Live config: maxmemory and maxmemory-policy changed on a running 3 × 1 cluster under the
// acknowledged writer are set on every server without restarting a pod; a refused value
// changes nothing and says so.
var _ = Describe("Live config", Label("liveconfig"), Ordered, func() {
	var cluster *v1.ValkeyCluster

	BeforeAll(func() {
		cluster = newCluster(newNamespace("e2e-live"), "live", 3, 1, nil)
		waitReady(cluster, 6*time.Minute)
	})

	It("sets maxmemory on every server under writes: no pod restarted, nothing lost", func() {
		uids, restarts := podUIDs(cluster), valkeyRestarts(cluster)
		w := startAckWriter(cluster, "live")
		start := time.Now()
		updateCluster(cluster, func(c *v1.ValkeyCluster) {
			c.Spec.Config = map[string]string{"maxmemory": "200mb", "maxmemory-policy": "allkeys-lru"}
		})
		Eventually(func() map[string]string { return serverConfig(cluster, "maxmemory") }).WithTimeout(time.Minute).WithPolling(200 * time.Millisecond).
			Should(HaveEach("209715200"))
		took := time.Since(start)
		Expect(serverConfig(cluster, "maxmemory-policy")).To(HaveEach("allkeys-lru"))
		Eventually(func() []string { return nodesConfigApplied(cluster) }).WithTimeout(time.Minute).Should(HaveEach("True/AppliedLive"))
		Eventually(func() []string { return configMapsWith(cluster, `maxmemory "200mb"`) }).WithTimeout(time.Minute).Should(HaveLen(6),
			"every ConfigMap holds the value the server runs")
		Eventually(func() []string { return clusterEventReasons(cluster) }).WithTimeout(30 * time.Second).Should(ContainElement("Normal/ConfigApplied"))
		Consistently(func() []string { return rollsPending(cluster) }).WithTimeout(5 * time.Second).Should(BeEmpty())
		acked, refused := w.stop()
		lost, unreadable := lostKeys(cluster, "live", acked)
		GinkgoWriter.Printf("live config: set on 6 servers %s after the change; acked=%d refused=%v lost=%d\n", took.Round(100*time.Millisecond), len(acked), refused, lost)
		AddReportEntry("liveconfig", fmt.Sprintf("set on 6 servers in %s; acked=%d lost=%d; pods restarted 0", took.Round(100*time.Millisecond), len(acked), lost))
		Expect(lost + unreadable).To(BeZero())
		Expect(podUIDs(cluster)).To(Equal(uids), "no pod replaced")
		Expect(valkeyRestarts(cluster)).To(Equal(restarts), "no container restarted")
		expectClusterCheck(cluster)
	})

	It("refuses a bad value whole and leaves the servers and their ConfigMaps as they were", func() {
		updateCluster(cluster, func(c *v1.ValkeyCluster) {
			c.Spec.Config = map[string]string{"maxmemory": "300mb", "maxmemory-policy": "no-such-policy"}
		})
		Eventually(func() string {
			c := status.Get(getCluster(cluster).Status.Conditions, v1.ConditionConfigApplied)
			if c == nil {
				return ""
			}
			return string(c.Status) + "/" + c.Reason
		}).WithTimeout(time.Minute).Should(Equal("False/ConfigRefused"))
		Eventually(func() []string { return clusterEventReasons(cluster) }).WithTimeout(30 * time.Second).Should(ContainElement("Warning/ConfigRefused"))
		Expect(serverConfig(cluster, "maxmemory")).To(HaveEach("209715200"))
		Expect(configMapsWith(cluster, `maxmemory "200mb"`)).To(HaveLen(6))
		Expect(rollsPending(cluster)).To(BeEmpty())
	})
})

// serverConfig is a setting as each server of the cluster reports it, by node.
func serverConfig(c *v1.ValkeyCluster, key string) map[string]string {
	pw := password(c)
	out := map[string]string{}
	for _, n := range clusterNodes(c) {
		cl := nodeClient(n, pw)
		kv, err := cl.Do(context.Background(), cl.B().ConfigGet().Parameter(key).Build()).AsStrMap()
		cl.Close()
		if err != nil {
			out[n.Name] = err.Error()
			continue
		}
		out[n.Name] = kv[key]
	}
	return out
}

// nodesConfigApplied is each node's ConfigApplied as "Status/Reason" at its generation.
func nodesConfigApplied(c *v1.ValkeyCluster) []string {
	var out []string
	for _, n := range clusterNodes(c) {
		cond := status.Get(n.Status.Conditions, v1.ConditionConfigApplied)
		if cond == nil || cond.ObservedGeneration != n.Generation {
			out = append(out, n.Name+": none at its generation")
			continue
		}
		out = append(out, string(cond.Status)+"/"+cond.Reason)
	}
	return out
}

// configMapsWith names the cluster's node ConfigMaps whose valkey.conf holds line.
func configMapsWith(c *v1.ValkeyCluster, line string) []string {
	var out []string
	for _, n := range clusterNodes(c) {
		var cm corev1.ConfigMap
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: v1.ConfigMapName(n.Name)}, &cm); err != nil {
			continue
		}
		if strings.Contains(cm.Data["valkey.conf"], line) {
			out = append(out, cm.Name)
		}
	}
	return out
}

// rollsPending names the nodes with RollPending=True.
func rollsPending(c *v1.ValkeyCluster) []string {
	var out []string
	for _, n := range clusterNodes(c) {
		if status.IsTrue(n.Status.Conditions, v1.ConditionRollPending) {
			out = append(out, n.Name)
		}
	}
	return out
}

// valkeyRestarts is the valkey container's restart count of each pod of the cluster.
func valkeyRestarts(c *v1.ValkeyCluster) map[string]int32 {
	out := map[string]int32{}
	for _, n := range clusterNodes(c) {
		out[n.Name], _ = containerState(getPod(n), "valkey")
	}
	return out
}
