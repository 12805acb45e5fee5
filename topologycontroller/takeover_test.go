package topologycontroller_test

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/valkey-io/valkey-go"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// In a cluster of one or two shards, a primary that comes back empty (an ephemeral node
// restarted, a new claim) leaves no majority of primaries to elect its replica: Valkey alone
// keeps the shard's slots on the lost ID forever. The operator has its replica take over,
// since every node of the shard answers with another ID and the replica completed its sync.
var _ = Describe("A primary lost for good in a small cluster", func() {
	DescribeTable("its synced replica takes over, the empty node rejoins as its replica, and no acknowledged key is lost",
		func(shards int32) {
			ns := newNamespace()
			f, pw := formCluster(ns, "small", shards, 1)
			const keys = 2000
			writeKeys(f, pw, keys)
			for s := int32(0); s < shards; s++ {
				Expect(waitAcked(f.server(valkeyv1.NodeName("small", s, 0)).Addr(), pw)).To(BeNumerically(">=", 1),
					"shard %d's replica acknowledged every write", s)
			}
			primary, replica := valkeyv1.NodeName("small", 0, 0), valkeyv1.NodeName("small", 0, 1)
			Expect(getNode(ns, primary).Status.Topology.Role).To(Equal(valkeyv1.RolePrimary))

			By("the primary of shard 0 comes back empty, under a new node ID")
			f.restart([]string{primary}, true)

			Eventually(clusterReady(ns, "small"), 2*formTimeout).Should(Succeed())
			Eventually(func() error { return checkHealthy(f, pw, int(shards), 1) }, time.Minute).Should(Succeed())
			Expect(getNode(ns, replica).Status.Topology.Role).To(Equal(valkeyv1.RolePrimary), "the replica took over")
			Expect(readKeys(f, pw, keys)).To(Equal(keys), "every acknowledged key is there")
			takeovers := func() int { return eventsWithReason(ns, valkeyv1.EventFailoverTakeover) }
			Eventually(takeovers, 10*time.Second).Should(Equal(2), "one Warning on the cluster and one on the replica's node")
			Consistently(takeovers, 3*time.Second).Should(Equal(2), "sent once")
		},
		Entry("1 shard", int32(1)),
		Entry("2 shards", int32(2)),
	)
})

var _ = Describe("A primary back without its data in its own pod", func() {
	DescribeTable("serves no sync to its replica, which keeps every acknowledged key and takes over",
		func(shards int32) {
			ns := newNamespace()
			f, pw := formCluster(ns, "empty", shards, 1)
			const keys = 2000
			writeKeys(f, pw, keys)
			primary, replica := valkeyv1.NodeName("empty", 0, 0), valkeyv1.NodeName("empty", 0, 1)
			replicaAddr := f.server(replica).Addr()
			Expect(waitAcked(f.server(primary).Addr(), pw)).To(BeNumerically(">=", 1), "the replica acknowledged every write")
			held := dbSize(replicaAddr, pw)
			Expect(held).To(BeNumerically(">=", keys/int(shards)/2), "the replica holds its shard's keys")

			By("the primary's server is killed, its /data emptied, and it starts again at the same address")
			f.restartEmptyInPlace(primary)

			// The replica keeps its keys at every moment, until the cluster is whole again.
			keeps := func() error {
				if n := dbSize(replicaAddr, pw); n >= 0 && n < held {
					return StopTrying(fmt.Sprintf("the replica went from %d keys to %d: it synced from the empty server", held, n))
				}
				return nil
			}
			Eventually(func() error {
				if err := keeps(); err != nil {
					return err
				}
				if err := clusterReady(ns, "empty")(); err != nil {
					return err
				}
				return checkHealthy(f, pw, int(shards), 1)
			}, 2*formTimeout, 100*time.Millisecond).Should(Succeed())
			Expect(getNode(ns, replica).Status.Topology.Role).To(Equal(valkeyv1.RolePrimary), "the replica took over")
			Expect(readKeys(f, pw, keys)).To(Equal(keys), "every acknowledged key is there")
			Eventually(func() int { return dbSize(f.server(primary).Addr(), pw) }, 30*time.Second).Should(Equal(held),
				"the restarted node synced the keys from the replica that took over")
			Expect(eventsWithReason(ns, valkeyv1.EventReplicationHeld)).To(BeNumerically(">=", 1), "the hold was reported")
		},
		Entry("1 shard", int32(1)),
		Entry("2 shards", int32(2)),
	)
})

// waitAcked is WAIT 1 on the server at addr: how many replicas acknowledged its writes.
func waitAcked(addr, pw string) int64 {
	c, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{addr}, Password: pw, ForceSingleClient: true, DisableCache: true})
	Expect(err).NotTo(HaveOccurred())
	defer c.Close()
	n, err := c.Do(context.Background(), c.B().Wait().Numreplicas(1).Timeout(5000).Build()).AsInt64()
	Expect(err).NotTo(HaveOccurred())
	return n
}
