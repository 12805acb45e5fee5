package status

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// conditioned is an object with status conditions (ValkeyNode, ValkeyCluster).
type conditioned interface {
	GetConditions() []metav1.Condition
}

func conditionsOf(o client.Object) []metav1.Condition {
	if c, ok := o.(conditioned); ok {
		return c.GetConditions()
	}
	return nil
}

// ConditionChanged passes updates where any of the given condition types appeared,
// disappeared or changed status, reason or observedGeneration. It is how a controller is
// woken when another controller's gate opens, instead of polling.
func ConditionChanged(types ...string) predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			oldConds, newConds := conditionsOf(e.ObjectOld), conditionsOf(e.ObjectNew)
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
	}
}

// DeletionChanged passes updates that start an object's deletion or change its finalizers.
func DeletionChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectOld.GetDeletionTimestamp().IsZero() != e.ObjectNew.GetDeletionTimestamp().IsZero() ||
				len(e.ObjectOld.GetFinalizers()) != len(e.ObjectNew.GetFinalizers())
		},
	}
}
