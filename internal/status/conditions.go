package status

import (
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Condition builds a condition of the given type from a bool status, a reason and a message.
func Condition(condType string, ok bool, reason, message string) metav1.Condition {
	s := metav1.ConditionFalse
	if ok {
		s = metav1.ConditionTrue
	}
	return metav1.Condition{Type: condType, Status: s, Reason: reason, Message: message}
}

// Get returns the condition of the given type, nil when absent.
func Get(conds []metav1.Condition, condType string) *metav1.Condition {
	return meta.FindStatusCondition(conds, condType)
}

// IsTrue tells whether the condition is True, whatever its generation.
func IsTrue(conds []metav1.Condition, condType string) bool {
	c := Get(conds, condType)
	return c != nil && c.Status == metav1.ConditionTrue
}

// IsCurrentTrue tells whether the condition is True and was written for obj's current
// generation. A gate waiting on another controller's condition uses this, so a stale True
// from before a spec change never opens it.
func IsCurrentTrue(obj client.Object, conds []metav1.Condition, condType string) bool {
	c := Get(conds, condType)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == obj.GetGeneration()
}

// Only returns the conditions of conds whose type is one of types, in their order (a cache
// transform keeps with it the conditions its controller reads).
func Only(conds []metav1.Condition, types ...string) []metav1.Condition {
	var out []metav1.Condition
	for _, c := range conds {
		if slices.Contains(types, c.Type) {
			out = append(out, c)
		}
	}
	return out
}
