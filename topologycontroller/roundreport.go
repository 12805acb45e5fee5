package topologycontroller

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// progressingSays tells whether the cluster's Progressing condition already says why: its
// Warning event was sent then.
func progressingSays(st *clusterState, why string) bool {
	c := status.Get(st.Cluster.Status.Conditions, valkeyv1.ConditionProgressing)
	return c != nil && c.Status == metav1.ConditionTrue && strings.Contains(c.Message, why)
}

// roundReport is how a concern package tells the user about the round: events on the
// cluster, and objects of the cluster's names that belong to another.
type roundReport struct {
	r  *Reconciler
	st *clusterState
}

// Event records an event on the cluster.
func (rr roundReport) Event(eventType, reason, action, msg string) {
	rr.r.event(rr.st.State, nil, eventType, reason, action, "%s", msg)
}

// Refused records a Warning event on the cluster unless Progressing says why already.
func (rr roundReport) Refused(reason, action, why string) {
	if !progressingSays(rr.st, why) {
		rr.r.event(rr.st.State, nil, corev1.EventTypeWarning, reason, action, "%s", why)
	}
}

// NotOwned records an object of the cluster's names that belongs to another (Progressing
// names it), with a Warning event when Progressing did not name it already.
func (rr roundReport) NotOwned(why string) {
	rr.st.notOwned = append(rr.st.notOwned, why)
	rr.Refused(valkeyv1.EventObjectNotOwned, "ApplyObject", why)
}
