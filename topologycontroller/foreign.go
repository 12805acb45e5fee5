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
	c := status.Get(st.cluster.Status.Conditions, valkeyv1.ConditionProgressing)
	return c != nil && c.Status == metav1.ConditionTrue && strings.Contains(c.Message, why)
}

// reportNotOwned records an object of the cluster's names that belongs to another, with a
// Warning event when Progressing did not name it already.
func (r *Reconciler) reportNotOwned(st *clusterState, why string) {
	st.notOwned = append(st.notOwned, why)
	if !progressingSays(st, why) {
		r.event(st, nil, corev1.EventTypeWarning, valkeyv1.EventObjectNotOwned, "ApplyObject", "%s", why)
	}
}

// roundReport is how a concern package tells the user about the round: events on the
// cluster, and objects of the cluster's names that belong to another.
type roundReport struct {
	r  *Reconciler
	st *clusterState
}

// Event records an event on the cluster.
func (rr roundReport) Event(eventType, reason, action, msg string) {
	rr.r.event(rr.st, nil, eventType, reason, action, "%s", msg)
}

// Refused records a Warning event on the cluster unless Progressing says why already.
func (rr roundReport) Refused(reason, action, why string) {
	if !progressingSays(rr.st, why) {
		rr.r.event(rr.st, nil, corev1.EventTypeWarning, reason, action, "%s", why)
	}
}

// NotOwned reports an object of the cluster's names that belongs to another.
func (rr roundReport) NotOwned(why string) { rr.r.reportNotOwned(rr.st, why) }
