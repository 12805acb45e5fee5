package round

import valkeyv1 "valkey.io/operator/apis/v1alpha1"

// EventFunc records an event of the round on its cluster (and on node, when given). Reasons
// are the topology block of apis/v1alpha1/events.go.
type EventFunc func(st *State, node *valkeyv1.ValkeyNode, eventType, reason, action, msg string, args ...any)
