package membership

import (
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"valkey.io/operator/topologycontroller/failover"
	"valkey.io/operator/topologycontroller/round"
)

// Members keeps the servers of a cluster one Valkey cluster, for the clusters of one
// controller: it meets the members (Meet), makes the others of each shard replicas of its
// primary (Replicate) after giving a shard whose members follow other shards a primary
// (DetachStray), forgets the IDs that are gone (Forget), hands over and releases the
// nodes being deleted (Drain, DrainedStatus) and removes the nodes a smaller spec no
// longer wants (ScaleIn). It keeps nothing between rounds.
type Members struct {
	// Client deletes the ValkeyNodes a scale-in removes.
	Client client.Client
	// DialTimeout bounds the dial that tells a forgotten address from a live one.
	DialTimeout time.Duration
	// Event records the membership's events.
	Event round.EventFunc
	// Failovers hands a deleted or removed primary's slots to its replica first.
	Failovers *failover.Failovers
}
