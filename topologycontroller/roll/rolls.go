package roll

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/topologycontroller/failover"
	"valkey.io/operator/topologycontroller/round"
)

// Rolls approves the pod restarts the workload controller asks for (RollPending), one node
// at a time per cluster, for the clusters of one controller. It keeps nothing between
// rounds: what was approved is read back from the nodes' RollApproved.
type Rolls struct {
	// APIReader counts the approvals past the cache before one more is given.
	APIReader client.Reader
	// ValkeyPort is where a not-ready pod's server is dialed before its roll.
	ValkeyPort int
	// Event records the rolls' events.
	Event round.EventFunc
	// Failovers hands a primary's slots to its replica before the primary rolls.
	Failovers *failover.Failovers
}

// Round is the roll phase's part of one reconcile: the observed cluster and what the phase
// needs of the others.
type Round struct {
	*round.State
	// Migrating: slots are moving this round (no primary rolls meanwhile).
	Migrating bool
	// ApplyNow writes n's RollApproved c at once, with the rest of n's status as the round
	// has it: the world learns of a failover before it starts.
	ApplyNow func(ctx context.Context, n *valkeyv1.ValkeyNode, c *metav1.Condition) error
}
