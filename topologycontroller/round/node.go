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
