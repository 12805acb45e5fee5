package round

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// UnhealthyVolume is n's VolumeHealthy when it is False (nil otherwise).
func UnhealthyVolume(n *valkeyv1.ValkeyNode) *metav1.Condition {
	c := status.Get(n.Status.Conditions, valkeyv1.ConditionVolumeHealthy)
	if c == nil || c.Status != metav1.ConditionFalse {
		return nil
	}
	return c
}

// Wanted tells whether (shard, replica) is part of vc's spec.
func Wanted(vc *valkeyv1.ValkeyCluster, shard, replica int32) bool {
	return shard < vc.Spec.Shards && replica <= vc.Spec.Replicas
}

// JoinedCondition is a node's ClusterJoined as this round decides it.
func JoinedCondition(ok bool, reason, msg string) metav1.Condition {
	return status.Condition(valkeyv1.ConditionClusterJoined, ok, reason, msg)
}
