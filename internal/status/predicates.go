package status

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// ConditionsOf extracts the conditions of an object a predicate sees.
type ConditionsOf func(client.Object) []metav1.Condition

// ConditionChanged passes updates where any of the given condition types changed status,
// reason or observedGeneration. It is how a controller is woken when another controller's
// gate opens, instead of polling.
func ConditionChanged(get ConditionsOf, types ...string) predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			oldConds, newConds := get(e.ObjectOld), get(e.ObjectNew)
			for _, t := range types {
				o, n := Get(oldConds, t), Get(newConds, t)
				if (o == nil) != (n == nil) {
					return true
				}
				if o != nil && (o.Status != n.Status || o.Reason != n.Reason || o.ObservedGeneration != n.ObservedGeneration) {
					return true
				}
			}
			return false
		},
		CreateFunc:  func(event.CreateEvent) bool { return true },
		DeleteFunc:  func(event.DeleteEvent) bool { return true },
		GenericFunc: func(event.GenericEvent) bool { return true },
	}
}
