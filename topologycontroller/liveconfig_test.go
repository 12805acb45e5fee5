package topologycontroller_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// configOf is a setting as each server of the fake workload reports it, by node.
func configOf(f *fakeWorkload, pw, key string, nodes ...string) func() map[string]string {
	return func() map[string]string {
		out := map[string]string{}
		for _, n := range nodes {
			c := single(f.server(n).Addr(), pw)
			kv, err := c.Do(context.Background(), c.B().ConfigGet().Parameter(key).Build()).AsStrMap()
			c.Close()
			if err != nil {
				out[n] = err.Error()
				continue
			}
			out[n] = kv[key]
		}
		return out
	}
}

// nodeConfigApplied is a node's ConfigApplied as "Status/Reason", "" when absent or not
// written for the node's generation.
func nodeConfigApplied(ns, name string) func() string {
	return func() string {
		n := getNode(ns, name)
		c := status.Get(n.Status.Conditions, valkeyv1.ConditionConfigApplied)
		if c == nil || c.ObservedGeneration != n.Generation {
			return ""
		}
		return string(c.Status) + "/" + c.Reason
	}
}

// both is v for the two nodes of a 1 × 1 cluster.
func both(cluster, v string) map[string]string {
	return map[string]string{valkeyv1.NodeName(cluster, 0, 0): v, valkeyv1.NodeName(cluster, 0, 1): v}
}

var _ = Describe("Live config", func() {
	It("sets changed live keys on every server without a restart, again on a restarted one, refuses a bad value whole, and sets removed keys back", func() {
		ns := newNamespace()
		f, pw := formCluster(ns, "lc", 1, 1)
		primary, replica := valkeyv1.NodeName("lc", 0, 0), valkeyv1.NodeName("lc", 0, 1)
		maxmemory := configOf(f, pw, "maxmemory", primary, replica)
		policy := configOf(f, pw, "maxmemory-policy", primary, replica)
		Eventually(nodeConfigApplied(ns, primary), 20*time.Second, 200*time.Millisecond).Should(Equal("True/AppliedLive"))
		Eventually(clusterCondition(ns, "lc", valkeyv1.ConditionConfigApplied), 20*time.Second, 200*time.Millisecond).Should(Equal("True/AppliedLive"))
		Expect(eventsWithReason(ns, valkeyv1.EventConfigApplied)).To(Equal(0), "servers that already run the values are not announced")
		version := getNode(ns, primary).Status.Topology.ServerVersion
		Expect(version).To(MatchRegexp(`^(redis )?[0-9]+\.[0-9]+\.[0-9]+$`), "the server's version is shown on the node")
		Eventually(func() string { return getCluster(ns, "lc").Status.ServerVersions }, 10*time.Second).Should(Equal(version))
		_, err := cmd(f.server(primary).Addr(), pw, "CONFIG", "SET", "slowlog-max-len", "1000")
		Expect(err).NotTo(HaveOccurred())
		slowlogLen := configOf(f, pw, "slowlog-max-len", primary)

		By("maxmemory and maxmemory-policy changed")
		patchSpec(ns, "lc", `{"config":{"maxmemory":"64mb","maxmemory-policy":"allkeys-lru"}}`)
		Eventually(maxmemory, 20*time.Second, 200*time.Millisecond).Should(Equal(both("lc", "67108864")))
		Expect(policy()).To(Equal(both("lc", "allkeys-lru")))
		for _, n := range []string{primary, replica} {
			Eventually(nodeConfigApplied(ns, n), 20*time.Second, 200*time.Millisecond).Should(Equal("True/AppliedLive"))
			Expect(status.Get(getNode(ns, n).Status.Conditions, valkeyv1.ConditionConfigApplied).Message).To(ContainSubstring("maxmemory=64mb, maxmemory-policy=allkeys-lru"))
		}
		Eventually(func() int { return eventsWithReason(ns, valkeyv1.EventConfigApplied) }, 10*time.Second, 200*time.Millisecond).Should(BeNumerically(">=", 1))

		By("a server restarted on its old config file gets them again")
		f.restart([]string{replica}, false)
		Eventually(maxmemory, 30*time.Second, 200*time.Millisecond).Should(Equal(both("lc", "67108864")))

		By("a value the server refuses")
		patchSpec(ns, "lc", `{"config":{"maxmemory":"32mb","maxmemory-policy":"no-such-policy"}}`)
		Eventually(nodeConfigApplied(ns, primary), 20*time.Second, 200*time.Millisecond).Should(Equal("False/ConfigRefused"))
		msg := status.Get(getNode(ns, primary).Status.Conditions, valkeyv1.ConditionConfigApplied).Message
		Expect(msg).To(ContainSubstring("maxmemory-policy"))
		Expect(msg).To(ContainSubstring("it runs as it was"))
		Eventually(clusterCondition(ns, "lc", valkeyv1.ConditionConfigApplied), 20*time.Second, 200*time.Millisecond).Should(Equal("False/ConfigRefused"))
		Eventually(func() int { return eventsWithReason(ns, valkeyv1.EventConfigRefused) }, 10*time.Second, 200*time.Millisecond).Should(Equal(1))
		Consistently(maxmemory, 2*time.Second, 200*time.Millisecond).Should(Equal(both("lc", "67108864")), "a refused CONFIG SET changes nothing")
		Expect(policy()).To(Equal(both("lc", "allkeys-lru")))
		Expect(eventsWithReason(ns, valkeyv1.EventConfigRefused)).To(Equal(1), "one Warning for one refusal")

		By("the keys removed from spec.config")
		patchSpec(ns, "lc", `{"config":null}`)
		Eventually(maxmemory, 20*time.Second, 200*time.Millisecond).Should(Equal(both("lc", "0")))
		Expect(policy()).To(Equal(both("lc", "noeviction")))
		Eventually(clusterCondition(ns, "lc", valkeyv1.ConditionConfigApplied), 20*time.Second, 200*time.Millisecond).Should(Equal("True/AppliedLive"))
		Expect(clusterReady(ns, "lc")()).To(Succeed())
		Expect(slowlogLen()).To(Equal(map[string]string{primary: "1000"}), "a key spec.config never named is left as the server has it")
	})
})
