package owned

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Apply writes obj (a typed object with its apiVersion and kind set) by server-side apply as
// fieldManager, forced: the controller owns exactly the fields obj sets, and a field it stops
// setting is removed. Status is not applied. What an earlier release owned by Update is
// taken over (see TakeOverUpdates).
func Apply(ctx context.Context, c client.Client, obj client.Object, fieldManager string) error {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return fmt.Errorf("%T %s as unstructured: %w", obj, obj.GetName(), err)
	}
	delete(u, "status")
	unstructured.RemoveNestedField(u, "metadata", "creationTimestamp")
	return applyOwning(ctx, c, u, fieldManager)
}

// ApplyConfiguration is Apply for an apply configuration (client-go's typed ones).
func ApplyConfiguration(ctx context.Context, c client.Client, ac runtime.ApplyConfiguration, fieldManager string) error {
	b, err := json.Marshal(ac)
	if err != nil {
		return fmt.Errorf("%T as JSON: %w", ac, err)
	}
	u := map[string]any{}
	if err := json.Unmarshal(b, &u); err != nil {
		return fmt.Errorf("%T as unstructured: %w", ac, err)
	}
	return applyOwning(ctx, c, u, fieldManager)
}

// applyOwning applies u as fieldManager. When the object answered still has fields owned by
// Update under one of the controller's names (an earlier release wrote it that way), their
// ownership is moved to the apply and u is applied once more, so that a field only that
// release set is removed now rather than kept for ever. When the apply is refused as invalid,
// the same is tried first on the object as it is: a field such a release set can make the
// merge invalid (a probe's exec beside this release's httpGet: one handler only), and is
// removed once it is the apply's.
func applyOwning(ctx context.Context, c client.Client, u map[string]any, fieldManager string) error {
	apply := func() (*unstructured.Unstructured, error) {
		in := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(u)}
		err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(in), client.FieldOwner(fieldManager), client.ForceOwnership)
		return in, err
	}
	got, err := apply()
	refused := err // what is returned when there is nothing to take over (nil after a success)
	if apierrors.IsInvalid(err) {
		if got, err = liveObject(ctx, c, u); err != nil {
			return refused
		}
	}
	if err != nil {
		return err
	}
	moved, err := TakeOverUpdates(ctx, c, got, fieldManager)
	if err != nil {
		return err
	}
	if !moved {
		return refused
	}
	_, err = apply()
	return err
}

// liveObject reads the object u names as it is, managed fields included (uncached: the
// client reads unstructured objects from the API server).
func liveObject(ctx context.Context, c client.Client, u map[string]any) (*unstructured.Unstructured, error) {
	live := &unstructured.Unstructured{Object: map[string]any{"apiVersion": u["apiVersion"], "kind": u["kind"]}}
	meta, _ := u["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	namespace, _ := meta["namespace"].(string)
	err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, live)
	return live, err
}
