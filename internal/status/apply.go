// Package status lets a controller write only the status it owns on a ValkeyNode or
// ValkeyCluster: its conditions and its status fields, by server-side apply with its own
// field manager. Each apply carries every condition and field the manager owns; whatever
// it leaves out is removed, and what other managers own is never touched.
package status

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Applier applies status for one field manager.
type Applier struct {
	Client       client.Client
	FieldManager string
	// Now returns the time for lastTransitionTime; time.Now when nil.
	Now func() time.Time
}

// Status is what one manager owns on an object's status.
type Status struct {
	// Conditions owned by the manager. Type, Status, Reason and Message are taken from
	// each; ObservedGeneration is set to the object's generation, and LastTransitionTime is
	// kept from the current condition when the status did not change.
	Conditions []metav1.Condition
	// Fields are further top-level status fields owned by the manager (for example
	// "volume" → *VolumeStatus, "observedGeneration" → int64). A nil value is left out,
	// which removes the field if the manager owned it.
	Fields map[string]any
}

// Apply writes st as obj's status for the applier's field manager. current holds obj's
// conditions as last read (used to keep lastTransitionTime).
func (a Applier) Apply(ctx context.Context, obj client.Object, current []metav1.Condition, st Status) error {
	gvk, err := a.Client.GroupVersionKindFor(obj)
	if err != nil {
		return fmt.Errorf("kind of %T: %w", obj, err)
	}
	now := time.Now
	if a.Now != nil {
		now = a.Now
	}
	conds := make([]any, 0, len(st.Conditions))
	for _, c := range Stamp(current, st.Conditions, obj.GetGeneration(), now()) {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&c)
		if err != nil {
			return err
		}
		conds = append(conds, m)
	}
	status := map[string]any{"conditions": conds}
	for k, v := range st.Fields {
		val, err := jsonValue(v)
		if err != nil {
			return fmt.Errorf("status field %s: %w", k, err)
		}
		if val != nil {
			status[k] = val
		}
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gvk.GroupVersion().String(),
		"kind":       gvk.Kind,
		"metadata": map[string]any{
			"name":      obj.GetName(),
			"namespace": obj.GetNamespace(),
		},
		"status": status,
	}}
	if err := a.Client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(a.FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply status of %s %s/%s as %s: %w", gvk.Kind, obj.GetNamespace(), obj.GetName(), a.FieldManager, err)
	}
	return nil
}

// Stamp returns desired with observedGeneration set to generation and lastTransitionTime
// kept from current when a condition's status is unchanged (now otherwise).
func Stamp(current, desired []metav1.Condition, generation int64, now time.Time) []metav1.Condition {
	out := make([]metav1.Condition, 0, len(desired))
	for _, c := range desired {
		c.ObservedGeneration = generation
		if c.Reason == "" {
			c.Reason = "Unknown"
		}
		if old := meta.FindStatusCondition(current, c.Type); old != nil && old.Status == c.Status && !old.LastTransitionTime.IsZero() {
			c.LastTransitionTime = old.LastTransitionTime
		} else {
			c.LastTransitionTime = metav1.NewTime(now.Truncate(time.Second))
		}
		out = append(out, c)
	}
	return out
}

// jsonValue turns a status field value into its unstructured form; nil for a nil value.
func jsonValue(v any) (any, error) {
	rv := reflect.ValueOf(v)
	if !rv.IsValid() || (rv.Kind() == reflect.Pointer && rv.IsNil()) {
		return nil, nil
	}
	if reflect.Indirect(rv).Kind() == reflect.Struct {
		if rv.Kind() != reflect.Pointer {
			p := reflect.New(rv.Type())
			p.Elem().Set(rv)
			rv = p
		}
		return runtime.DefaultUnstructuredConverter.ToUnstructured(rv.Interface())
	}
	rv = reflect.Indirect(rv)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int(), nil
	case reflect.String:
		return rv.String(), nil
	case reflect.Bool:
		return rv.Bool(), nil
	}
	return nil, fmt.Errorf("unsupported status field type %T", v)
}
