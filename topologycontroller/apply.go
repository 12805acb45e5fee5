package topologycontroller

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/owned"
)

// applyOwned writes obj by server-side apply as the topology controller's field manager
// (owned.Apply).
func (r *Reconciler) applyOwned(ctx context.Context, obj client.Object) error {
	return owned.Apply(ctx, r.Client, obj, valkeyv1.FieldManagerTopology)
}

// ownedLabels are the labels of what the topology controller makes for a cluster.
func ownedLabels(vc *valkeyv1.ValkeyCluster) map[string]string {
	return map[string]string{
		valkeyv1.LabelCluster:   vc.Name,
		valkeyv1.LabelManagedBy: valkeyv1.ManagedByValue,
		valkeyv1.LabelName:      valkeyv1.NameValue,
	}
}
