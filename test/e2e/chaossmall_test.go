package e2e

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"

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
