package status_test

import (
	"strings"
	"testing"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"valkey.io/operator/internal/status"
)

// decoded is s in memory of its own, as a decoder leaves each string of each object.
func decoded(s string) string { return strings.Clone(s) }

// same tells whether a and b are one string in memory, not two equal ones.
func same(a, b string) bool {
	return unsafe.StringData(a) == unsafe.StringData(b) //nolint:gosec // the pointers are compared, never followed
}

// Only keeps the conditions asked for, in their order, in a slice of exactly their number,
// with the types' and statuses' strings shared rather than one copy per cached object.
func TestOnlyKeepsTheConditionsAskedForAndSharesTheirStrings(t *testing.T) {
	conds := []metav1.Condition{
		{Type: decoded("VolumeReady"), Status: metav1.ConditionStatus(decoded("True")), Reason: "Bound", ObservedGeneration: 3},
		{Type: decoded("Seeded"), Status: metav1.ConditionStatus(decoded("False")), Reason: "Waiting"},
		{Type: decoded("Drained"), Status: metav1.ConditionStatus(decoded("Unknown")), Reason: "Unknown", Message: "not yet"},
	}
	types := []string{"Drained", "VolumeReady"}
	got := status.Only(conds, types...)
	if len(got) != 2 || cap(got) != 2 {
		t.Fatalf("kept %d conditions in room for %d, want 2 in 2: %+v", len(got), cap(got), got)
	}
	if got[0].Type != "VolumeReady" || got[0].Reason != "Bound" || got[0].ObservedGeneration != 3 ||
		got[1].Type != "Drained" || got[1].Message != "not yet" {
		t.Fatalf("kept %+v, want VolumeReady then Drained as they were", got)
	}
	if !same(got[0].Type, types[1]) || !same(got[1].Type, types[0]) {
		t.Error("a kept condition's type is its own copy, not the string asked for")
	}
	if !same(string(got[0].Status), string(metav1.ConditionTrue)) || !same(string(got[1].Status), string(metav1.ConditionUnknown)) {
		t.Error("a kept condition's status is its own copy, not metav1's constant")
	}
	if conds[0].Type != "VolumeReady" || len(conds) != 3 {
		t.Errorf("the conditions given were changed: %+v", conds)
	}
	if none := status.Only(conds, "Paused"); none != nil {
		t.Errorf("nothing asked for is there, kept %+v", none)
	}
}
