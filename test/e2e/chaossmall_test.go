package e2e

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// Small ephemeral clusters whose primary comes back empty: its server killed and its pod
// force-deleted, so that the new pod starts on an empty /data under a new node ID. With one
// or two shards no majority of primaries is left to elect the replica: the replica takes
// over (valkey-start's fencing when the old container restarts first, else the topology
// controller's CLUSTER FAILOVER TAKEOVER), the new node rejoins as its replica, and no
// acknowledged key is lost.
var _ = Describe("Small ephemeral clusters under acknowledged writes", Label("chaos"), func() {
	for _, shards := range []int32{1, 2} {
		It(fmt.Sprintf("a %d × 1 ephemeral cluster whose primary comes back empty", shards), func() {
			ns := newNamespace(fmt.Sprintf("e2e-small%d", shards))
			cluster := newCluster(ns, "small", shards, 1, nil)
			waitReady(cluster, 5*time.Minute)
			expectClusterOK(cluster)
			since := time.Now()
			underFault(cluster, fmt.Sprintf("ephemeral-%dx1-primary-empty", shards), func() {
				_, primary := replicaAndPrimary(cluster)
				pod := getPod(primary)
				out, err := kubectl("-n", ns, "exec", pod.Name, "-c", "valkey", "--", "kit", "kill", "KILL", "valkey-server")
				GinkgoWriter.Printf("kill valkey-server of %s: %v %s\n", primary.Name, err, out)
				deletePod(primary, "--grace-period=0", "--force")
			})
			GinkgoWriter.Printf("the topology controller's takeover: %v\n", clusterEvent(cluster, valkeyv1.EventFailoverTakeover, since))
		})
	}
})

// A primary's server that restarts in its own pod without its data (its /data emptied while
// it was stopped, then killed: a lost volume or a lost nodes.conf) comes back at the same
// address under a new node ID. Its replica still follows that address: it must not be given
// the empty data set. valkey-start starts such a server with the replication user off until
// the topology controller has settled the shard (docs/contract.md, "A server back without its
// data"); the replica keeps its keys and takes over.
var _ = Describe("A primary restarted in its pod without its data, under acknowledged writes", Label("chaos"), func() {
	for _, durable := range []bool{false, true} {
		kind := map[bool]string{false: "ephemeral", true: "persistent"}[durable]
		It(fmt.Sprintf("a 2 × 1 %s cluster keeps every acknowledged write", kind), func() {
			ns := newNamespace("e2e-wiped-" + kind)
			var p *valkeyv1.PersistenceSpec
			if durable {
				p = persistence("1Gi", expandableClass, valkeyv1.ReclaimDelete)
			}
			cluster := newCluster(ns, "wiped", 2, 1, p)
			waitReady(cluster, 5*time.Minute)
			expectClusterOK(cluster)
			since := time.Now()
			underFault(cluster, fmt.Sprintf("%s-2x1-primary-wiped-in-place", kind), func() {
				_, primary := replicaAndPrimary(cluster)
				pod := getPod(primary)
				restarts, _ := containerState(pod, "valkey")
				out, err := kubectl("-n", ns, "exec", pod.Name, "-c", "valkey", "--", "kit", "wipe", "/data", "valkey-server")
				Expect(err).NotTo(HaveOccurred(), out)
				GinkgoWriter.Printf("wiped /data of %s and killed its server: %s\n", primary.Name, out)
				Eventually(func() int32 {
					n, _ := containerState(getPod(primary), "valkey")
					return n
				}).WithTimeout(2*time.Minute).Should(BeNumerically(">", restarts), "the container restarted in its pod")
				Expect(getPod(primary).UID).To(Equal(pod.UID), "the same pod")
			})
			GinkgoWriter.Printf("events: %v; takeover: %v\n", clusterEventReasons(cluster), clusterEvent(cluster, valkeyv1.EventFailoverTakeover, since))
		})
	}
})
