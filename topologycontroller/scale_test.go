package topologycontroller_test

import (
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// scaledTo fails until the cluster reports Ready at its current generation with shards
// ready shards.
func scaledTo(ns, name string, shards int32) func() error {
	return func() error {
		if err := clusterReady(ns, name)(); err != nil {
			return err
		}
		if got := getCluster(ns, name).Status.ReadyShards; got != shards {
			return fmt.Errorf("Ready with %d ready shards, want %d", got, shards)
		}
		return nil
	}
}

// removedNodes names the ValkeyNodes of shards at or above shards.
func removedNodes(ns string, shards int32) []string {
	var out []string
	for _, n := range listNodes(ns) {
		if n.Spec.Shard >= shards {
			out = append(out, n.Name)
		}
	}
	return out
}

// shardsApart fails unless every server of the namespace's nodes is its shard's primary or
// a replica of it, as the servers themselves say (CLUSTER NODES, myself line).
func shardsApart(f *fakeWorkload, ns, pw string) error {
	shardOf, followed := map[string]int32{}, map[string]string{}
	for _, n := range listNodes(ns) {
		s := f.server(n.Name)
		if s == nil {
			return fmt.Errorf("%s has no server", n.Name)
		}
		lines, err := clusterNodes(s.Addr(), pw)
		if err != nil {
			return err
		}
		for _, l := range lines {
			if strings.Contains(l.flags, "myself") {
				shardOf[l.id] = n.Spec.Shard
				followed[n.Name] = l.primary
			}
		}
	}
	for _, n := range listNodes(ns) {
		p := followed[n.Name]
		if p == "-" || p == "" {
			continue
		}
		if s, ok := shardOf[p]; !ok || s != n.Spec.Shard {
			return fmt.Errorf("%s (shard %d) follows %s, of shard %d (known: %t)", n.Name, n.Spec.Shard, p, s, ok)
		}
	}
	return nil
}

// reAddTimeout bounds the scale-out that adds a shard removed less than a minute before:
// its nodes come back with their IDs, which the cluster drops again until 60 s after it
// forgot them (Valkey spreads CLUSTER FORGET with that TTL).
const reAddTimeout = formTimeout + time.Minute

var _ = Describe("Scaling back and forth", func() {

	It("converges 2 → 3 → 2 → 3 shards with retained claims: removed nodes gone before Ready, the shard re-added as its own", func() {
		ns := newNamespace()
		f, pw := formPersistentCluster(ns, "c", 2, 1, false) // reclaimPolicy: Retain (the default)
		writeKeys(f, pw, 2000)

		By("scaling out to 3 shards")
		setShards(ns, "c", 3)
		Eventually(scaledTo(ns, "c", 3), formTimeout).Should(Succeed())
		ids := nodeIDs(ns)

		By("scaling in to 2 shards: Ready only once shard 2's nodes are gone")
		setShards(ns, "c", 2)
		Eventually(scaledTo(ns, "c", 2), formTimeout).Should(Succeed())
		Expect(removedNodes(ns, 2)).To(BeEmpty(), "Ready at 2 shards while nodes of the removed shard exist")
		Expect(checkHealthy(f, pw, 2, 1)).To(Succeed())

		By("scaling out to 3 shards again: shard 2 comes back on its retained claims")
		setShards(ns, "c", 3)
		Eventually(scaledTo(ns, "c", 3), reAddTimeout).Should(Succeed())
		Expect(nodeIDs(ns)[valkeyv1.NodeName("c", 2, 0)]).To(Equal(ids[valkeyv1.NodeName("c", 2, 0)]), "shard 2 did not come back on its retained claim")
		Expect(shardsApart(f, ns, pw)).To(Succeed())
		Expect(checkHealthy(f, pw, 3, 1)).To(Succeed())
		Expect(readKeys(f, pw, 2000)).To(Equal(2000))
	})
})
