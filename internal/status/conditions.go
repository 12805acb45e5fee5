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
// transform keeps with it the conditions its controller reads). The result is a new slice
// of exactly their number, whose types and statuses are the constants' strings rather than
// conds' (decoded, one copy per object): a cache of thousands of nodes keeps less.
func Only(conds []metav1.Condition, types ...string) []metav1.Condition {
	n := 0
	for _, c := range conds {
		if slices.Contains(types, c.Type) {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	out := make([]metav1.Condition, 0, n)
	for _, c := range conds {
		if i := slices.Index(types, c.Type); i >= 0 {
			c.Type, c.Status = types[i], canonicalStatus(c.Status)
			out = append(out, c)
		}
	}
	return out
}

// canonicalStatus is s as one of metav1's ConditionStatus constants when it is one.
func canonicalStatus(s metav1.ConditionStatus) metav1.ConditionStatus {
	for _, known := range []metav1.ConditionStatus{metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown} {
		if s == known {
			return known
		}
	}
	return s
}
