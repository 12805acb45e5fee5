package topologycontroller

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

func nodeWithWorkload(status metav1.ConditionStatus, reason, msg string, gen int64) *valkeyv1.ValkeyNode {
	n := &valkeyv1.ValkeyNode{}
	if status != "" {
		n.Status.Conditions = []metav1.Condition{{Type: valkeyv1.ConditionWorkloadReady, Status: status, Reason: reason, Message: msg, ObservedGeneration: gen}}
	}
	return n
}

// The node events that wake the cluster: every WorkloadReady change the controller reads,
// none of the workload's intermediate steps.
func TestNodeChangedWorkloadReady(t *testing.T) {
	const f, tr = metav1.ConditionFalse, metav1.ConditionTrue
	tests := []struct {
		name     string
		old, new *valkeyv1.ValkeyNode
		want     bool
	}{
		{"pod pending to pod not ready", nodeWithWorkload(f, valkeyv1.ReasonPodPending, "", 1), nodeWithWorkload(f, valkeyv1.ReasonPodNotReady, "", 1), false},
		{"creating, first report", nodeWithWorkload("", "", "", 0), nodeWithWorkload(f, valkeyv1.ReasonCreating, "", 1), false},
		{"a not-ready message changes", nodeWithWorkload(f, valkeyv1.ReasonPodNotReady, "a", 1), nodeWithWorkload(f, valkeyv1.ReasonPodNotReady, "b", 1), false},
		{"pod ready", nodeWithWorkload(f, valkeyv1.ReasonPodNotReady, "", 1), nodeWithWorkload(tr, valkeyv1.ReasonReady, "", 1), true},
		{"pod no longer ready", nodeWithWorkload(tr, valkeyv1.ReasonReady, "", 1), nodeWithWorkload(f, valkeyv1.ReasonPodNotReady, "", 1), true},
		{"ready for a new generation", nodeWithWorkload(tr, valkeyv1.ReasonReady, "", 1), nodeWithWorkload(tr, valkeyv1.ReasonReady, "", 2), true},
		{"waiting for its volume", nodeWithWorkload("", "", "", 0), nodeWithWorkload(f, valkeyv1.ReasonWaitingForVolume, "", 1), true},
		{"volume ready, pod pending", nodeWithWorkload(f, valkeyv1.ReasonWaitingForVolume, "", 1), nodeWithWorkload(f, valkeyv1.ReasonPodPending, "", 1), true},
		{"Kubernetes node lost", nodeWithWorkload(f, valkeyv1.ReasonPodNotReady, "", 1), nodeWithWorkload(f, valkeyv1.ReasonNodeNotReady, "k2 is NotReady", 1), true},
		{"lost node's state changes", nodeWithWorkload(f, valkeyv1.ReasonNodeNotReady, "k2 is NotReady", 1), nodeWithWorkload(f, valkeyv1.ReasonNodeNotReady, "k2 is Unknown", 1), true},
	}
	p := nodeChanged()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, n := range []*valkeyv1.ValkeyNode{tt.old, tt.new} {
				n.Name, n.Generation = "c-0-0", 1
			}
			if got := p.Update(event.UpdateEvent{ObjectOld: tt.old, ObjectNew: tt.new}); got != tt.want {
				t.Errorf("passed = %v, want %v", got, tt.want)
			}
		})
	}
}
