package workloadcontroller

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// TestSlimValkeyNodeKeepsWhatTheControllerReads: the spec, status.workload and every
// condition the controller reads or waits for are the same in the cached copy; the other
// controllers' conditions and status are gone.
func TestSlimValkeyNodeKeepsWhatTheControllerReads(t *testing.T) {
	full := &valkeyv1.ValkeyNode{
		ObjectMeta: metav1.ObjectMeta{Name: "c-0-0", Generation: 2, ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "x"}}},
		Spec: valkeyv1.ValkeyNodeSpec{ClusterName: "c", ServerSpec: valkeyv1.ServerSpec{Image: "valkey:9",
			Config: map[string]string{"maxmemory": "1gb"}}},
		Status: valkeyv1.ValkeyNodeStatus{
			Workload: &valkeyv1.WorkloadStatus{Kind: "StatefulSet", PodIP: "10.0.0.7", DesiredTemplateHash: "h"},
			Volume:   &valkeyv1.VolumeStatus{ClaimName: "valkey-c-0-0-data"},
			Topology: &valkeyv1.TopologyStatus{NodeID: "abc"},
		},
	}
	all := append(append(append([]string{}, valkeyv1.VolumeConditions...), valkeyv1.WorkloadConditions...), valkeyv1.TopologyConditions...)
	for _, c := range all {
		full.Status.Conditions = append(full.Status.Conditions, status.Condition(c, true, "Because", "a message of "+c))
	}
	out, err := slimValkeyNode(full.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	slim := out.(*valkeyv1.ValkeyNode)
	if !equality.Semantic.DeepEqual(full.Spec, slim.Spec) || !equality.Semantic.DeepEqual(full.Status.Workload, slim.Status.Workload) {
		t.Errorf("spec or status.workload changed: %+v", slim)
	}
	for _, c := range readConditions {
		if got, want := status.Get(slim.Status.Conditions, c), status.Get(full.Status.Conditions, c); !equality.Semantic.DeepEqual(got, want) {
			t.Errorf("condition %s: got %v, want %v", c, got, want)
		}
	}
	if len(slim.Status.Conditions) != len(readConditions) || slim.Status.Volume != nil || slim.Status.Topology != nil || slim.ManagedFields != nil {
		t.Errorf("kept what is never read: %+v", slim.Status)
	}
}
