package workloadcontroller

import (
	"time"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// volumeUnreported is how long to wait before reporting a new node that waits for its
// volume: while the volume controller has not written VolumeReady at all and the node is
// younger than grace, WorkloadReady=False, WaitingForVolume would be superseded as soon as
// it does (a VolumeReady change brings the node back). Zero means report now.
func volumeUnreported(node *valkeyv1.ValkeyNode, grace time.Duration, now time.Time) time.Duration {
	if status.Get(node.Status.Conditions, valkeyv1.ConditionVolumeReady) != nil {
		return 0
	}
	if left := node.CreationTimestamp.Add(grace).Sub(now); left > 0 {
		return left
	}
	return 0
}

// volumeMissing completes the WaitingForVolume message when VolumeReady was never written.
func volumeMissing(node *valkeyv1.ValkeyNode) string {
	if status.Get(node.Status.Conditions, valkeyv1.ConditionVolumeReady) != nil {
		return ""
	}
	return "; the volume controller has not reported VolumeReady for this node: check that valkey-volume-controller runs"
}
