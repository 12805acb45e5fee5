package volumecontroller

import (
	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// readConditions are the ValkeyNode conditions the controller reads: its own, the
// topology controller's Drained (a claim may go) and Paused, and SnapshotReady.
var readConditions = append([]string{valkeyv1.ConditionDrained, valkeyv1.ConditionPaused, valkeyv1.ConditionSnapshotReady},
	valkeyv1.VolumeConditions...)

// slimNode keeps of a cached ValkeyNode what the controller reads: its metadata (without
// managedFields), its place (spec.clusterName, shard and replicaIndex: NodeLabels, the labels
// of its claim and snapshots), spec.persistence and spec.restore, the conditions of
// readConditions, status.volume, the pod's address of status.workload (the usage poller)
// and the saved point of status.topology (snapshots). The rest of the spec and the other
// controllers' conditions were most of each cached node. The controller writes a node only
// by its own status apply and by merge patches of its finalizer, computed from two copies
// of the same cached object, so nothing dropped here is ever written back.
func slimNode(o any) (any, error) {
	n, ok := o.(*valkeyv1.ValkeyNode)
	if !ok {
		return o, nil
	}
	n.ManagedFields = nil
	n.Spec = valkeyv1.ValkeyNodeSpec{
		ClusterName:  n.Spec.ClusterName,
		Shard:        n.Spec.Shard,
		ReplicaIndex: n.Spec.ReplicaIndex,
		Restore:      n.Spec.Restore,
		ServerSpec:   valkeyv1.ServerSpec{Persistence: n.Spec.Persistence},
	}
	n.Status.Conditions = status.Only(n.Status.Conditions, readConditions...)
	if w := n.Status.Workload; w != nil {
		n.Status.Workload = &valkeyv1.WorkloadStatus{PodIP: w.PodIP}
	}
	if t := n.Status.Topology; t != nil {
		n.Status.Topology = &valkeyv1.TopologyStatus{SavedPoint: t.SavedPoint}
	}
	return n, nil
}
