package workloadcontroller

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

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

// TestSlimWorkloadKeepsWhatReadWorkloadReads: a StatefulSet and a Deployment as the
// controller builds them (during a roll), as the API server returns them (UID, status),
// read by readWorkload the same from the cached copy, which holds no labels, selector or
// pod spec.
func TestSlimWorkloadKeepsWhatReadWorkloadReads(t *testing.T) {
	node := withName(baseNode())
	sts, err := desiredFor(node, &current{workloads: map[valkeyv1.WorkloadType]*workload{}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ephemeral, dep := deploymentOf(t, node)
	full := []client.Object{&appsv1.StatefulSet{}, &appsv1.Deployment{}}
	decode(t, buildWorkload(node, sts, "0123abcd"), full[0])
	decode(t, buildWorkload(ephemeral, dep, "0123abcd"), full[1])
	full[1].(*appsv1.Deployment).Status.Conditions = []appsv1.DeploymentCondition{{
		Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate", Message: "quota"}}
	for _, obj := range full {
		obj.SetUID("uid-2")
		before := *readWorkload(obj)
		if before.hash == "" || before.rollFrom == "" || (before.kind == valkeyv1.WorkloadStatefulSet) != (before.serviceName != "") {
			t.Fatalf("the built %s lacks what the test compares: %+v", before.kind, before)
		}
		slim := obj.DeepCopyObject().(client.Object)
		if _, err := slimWorkload(slim); err != nil {
			t.Fatal(err)
		}
		if after := *readWorkload(slim); after != before {
			t.Errorf("%s read from the cache: %+v, want %+v", before.kind, after, before)
		}
		if slim.GetLabels() != nil {
			t.Errorf("%s keeps its labels in the cache", before.kind)
		}
		switch w := slim.(type) {
		case *appsv1.StatefulSet:
			if w.Spec.Selector != nil || len(w.Spec.Template.Spec.Containers) > 0 || len(w.Spec.Template.Labels) > 0 {
				t.Errorf("the cached StatefulSet keeps its selector or pod template: %+v", w.Spec)
			}
		case *appsv1.Deployment:
			if w.Spec.Selector != nil || len(w.Spec.Template.Spec.Containers) > 0 || len(w.Spec.Template.Labels) > 0 {
				t.Errorf("the cached Deployment keeps its selector or pod template: %+v", w.Spec)
			}
		}
	}
}
