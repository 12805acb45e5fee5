package topologycontroller

import (
	"k8s.io/apimachinery/pkg/runtime"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/topologycontroller/round"
)

// event records an event on the ValkeyCluster (and on the node, when given). Reasons are
// the topology block of apis/v1alpha1/events.go.
func (r *Reconciler) event(st *round.State, node *valkeyv1.ValkeyNode, eventType, reason, action, msg string, args ...any) {
	var related runtime.Object
	if node != nil {
		related = node
	}
	r.Recorder.Eventf(st.Cluster, related, eventType, reason, action, msg, args...)
	countEvent(st.Cluster.Namespace, st.Cluster.Name, reason)
	if node != nil {
		r.Recorder.Eventf(node, nil, eventType, reason, action, msg, args...)
	}
}
