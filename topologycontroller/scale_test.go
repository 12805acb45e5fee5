package topologycontroller_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
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

var _ = Describe("A removed shard whose slots cannot move", func() {

	It("keeps every copy of the shard, replicas too, while its primary owns slots", func() {
		ns := newNamespace()
		f := startFakeWorkload(ns)
		DeferCleanup(f.stop)
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": valkeyv1.GroupVersion.String(),
			"kind":       "ValkeyCluster",
			"metadata":   map[string]any{"name": "c", "namespace": ns},
			"spec": map[string]any{"shards": int64(2), "replicas": int64(1),
				"persistence": map[string]any{"size": "1Gi", "reclaimPolicy": "Delete"}},
		}}
		Expect(k8s.Create(context.Background(), u)).To(Succeed())
		pw := clusterPassword(ns, "c")
		Eventually(clusterReady(ns, "c"), formTimeout).Should(Succeed())
		Eventually(func() error { return checkHealthy(f, pw, 2, 1) }, 30*time.Second).Should(Succeed())
		writeKeys(f, pw, 2000)

		By("shard 1 removed while its primary answers no client (CLIENT PAUSE ALL): its slots cannot move")
		keep, _ := primaryOf(ns, 0)
		leave, leaveReplica := primaryOf(ns, 1)
		Expect(leaveReplica).NotTo(BeEmpty())
		leaveID := getNode(ns, leave).Status.Topology.NodeID
		_, err := cmd(f.server(leave).Addr(), pw, "CLIENT", "PAUSE", "20000", "ALL")
		Expect(err).NotTo(HaveOccurred())
		setShards(ns, "c", 1)

		By("its replica is not released while its primary owns slots, and the cluster says why")
		Eventually(func(g Gomega) {
			c := status.Get(getCluster(ns, "c").Status.Conditions, valkeyv1.ConditionProgressing)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Message).To(ContainSubstring("shard 1 keeps its nodes until its slots have moved"))
		}, 10*time.Second).Should(Succeed())
		Consistently(func(g Gomega) {
			var n valkeyv1.ValkeyNode
			g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: leaveReplica}, &n)).To(Succeed(), "%s deleted while its primary %s owns slots", leaveReplica, leave)
			g.Expect(n.DeletionTimestamp).To(BeNil(), "%s deleted while its primary %s owns slots", leaveReplica, leave)
			lines, err := clusterNodes(f.server(keep).Addr(), pw)
			g.Expect(err).NotTo(HaveOccurred())
			owned := 0
			for _, l := range lines {
				if l.id == leaveID {
					owned = l.slots
				}
			}
			g.Expect(owned).To(BeNumerically(">", 0), "the spec proves nothing once %s owns no slots", leave)
		}, 12*time.Second, 200*time.Millisecond).Should(Succeed())

		By("the slots move once the primary answers again, then the shard goes")
		Eventually(func() error { return checkHealthy(f, pw, 1, 1) }, 2*time.Minute).Should(Succeed())
		Eventually(scaledTo(ns, "c", 1), 30*time.Second).Should(Succeed())
		Expect(removedNodes(ns, 1)).To(BeEmpty())
		Expect(readKeys(f, pw, 2000)).To(Equal(2000))
	})
})
