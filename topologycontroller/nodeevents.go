package topologycontroller

import (
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// workloadGateChanged passes the WorkloadReady changes the topology controller acts on: the
// condition turning True or False, a True condition for a new generation (roll approvals
// wait for it), and a pod that is not ready turning to or from the reasons it reads
// (WaitingForVolume: no pod until the claim is ready; NodeNotReady: a lost Kubernetes node,
// named in Degraded). The workload's other steps (Creating, PodPending, PodNotReady...) of a
// pod that is not ready yet change nothing the controller decides, and are dropped: during
// a fan-out they are most of a node's status updates.
func workloadGateChanged() predicate.Predicate {
	return nodeUpdate(func(o, n *valkeyv1.ValkeyNode) bool { return workloadGate(o) != workloadGate(n) })
}

// workloadGate is what the topology controller reads of n's WorkloadReady.
func workloadGate(n *valkeyv1.ValkeyNode) string {
	c := status.Get(n.Status.Conditions, valkeyv1.ConditionWorkloadReady)
	switch {
	case c == nil:
		return "NotReady"
	case c.Status == metav1.ConditionTrue:
		return "True/" + strconv.FormatInt(c.ObservedGeneration, 10)
	case c.Reason == valkeyv1.ReasonWaitingForVolume:
		return c.Reason
	case c.Reason == valkeyv1.ReasonNodeNotReady:
		return c.Reason + "/" + c.Message
	}
	return "NotReady"
}
