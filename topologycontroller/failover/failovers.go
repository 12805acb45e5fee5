package failover

import (
	"time"

	"k8s.io/apimachinery/pkg/types"

	"valkey.io/operator/topologycontroller/round"
)

// Options are the controller's flags for failovers.
type Options struct {
	// Timeout bounds waiting for a replica to take over after CLUSTER FAILOVER
	// (--failover-timeout).
	Timeout time.Duration
	// Backoff is the wait before a failover that did not complete is tried again; it
	// doubles with each failure in a row, up to BackoffMax (--failover-backoff,
	// --failover-backoff-max).
	Backoff, BackoffMax time.Duration
}

// Failovers hands primaries' slots to their replicas for the clusters of one controller:
// planned (Start: before a roll, a drain, a scale-in) and, for a lost primary whose shard
// does not elect one, by takeover (TakeOver). It keeps one record between rounds: the tries
// under way or backing off.
type Failovers struct {
	Options Options
	// Event records the failovers' events.
	Event round.EventFunc

	tries *failoverTries
}

// New is the failovers of one controller.
func New(opts Options, event round.EventFunc) *Failovers {
	return &Failovers{Options: opts, Event: event, tries: newFailoverTries()}
}

// Running tells whether a failover of the node named name of cluster uid is under way.
func (fo *Failovers) Running(uid types.UID, name string) bool {
	return fo.tries.get(failoverKey{cluster: uid, node: name}).running()
}
