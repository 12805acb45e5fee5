package topologycontroller

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// applyOwned writes obj (a typed object with its apiVersion and kind set) by server-side
// apply as the topology controller's field manager, forced: the controller owns exactly the
// fields obj sets, and a field it stops setting is removed. Status is not applied.
func (r *Reconciler) applyOwned(ctx context.Context, obj client.Object) error {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return fmt.Errorf("%T %s as unstructured: %w", obj, obj.GetName(), err)
	}
	delete(u, "status")
	unstructured.RemoveNestedField(u, "metadata", "creationTimestamp")
	return r.Apply(ctx, client.ApplyConfigurationFromUnstructured(&unstructured.Unstructured{Object: u}),
		client.FieldOwner(valkeyv1.FieldManagerTopology), client.ForceOwnership)
}

// ownedLabels are the labels of what the topology controller makes for a cluster.
func ownedLabels(vc *valkeyv1.ValkeyCluster) map[string]string {
	return map[string]string{
		valkeyv1.LabelCluster:   vc.Name,
		valkeyv1.LabelManagedBy: valkeyv1.ManagedByValue,
		valkeyv1.LabelName:      valkeyv1.NameValue,
	}
}
