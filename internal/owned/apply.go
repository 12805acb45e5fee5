package owned

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Apply writes obj (a typed object with its apiVersion and kind set) by server-side apply as
// fieldManager, forced: the controller owns exactly the fields obj sets, and a field it stops
// setting is removed. Status is not applied.
func Apply(ctx context.Context, c client.Client, obj client.Object, fieldManager string) error {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return fmt.Errorf("%T %s as unstructured: %w", obj, obj.GetName(), err)
	}
	delete(u, "status")
	unstructured.RemoveNestedField(u, "metadata", "creationTimestamp")
	return c.Apply(ctx, client.ApplyConfigurationFromUnstructured(&unstructured.Unstructured{Object: u}),
		client.FieldOwner(fieldManager), client.ForceOwnership)
}
