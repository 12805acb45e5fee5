package volumecontroller

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// fullNode is a ValkeyNode of a cluster with every part of its spec and status set.
func fullNode() *valkeyv1.ValkeyNode {
	n := &valkeyv1.ValkeyNode{
		ObjectMeta: metav1.ObjectMeta{Name: "c-2-1", Namespace: "ns", Generation: 3, Labels: map[string]string{"team": "a"},
			Annotations: map[string]string{valkeyv1.AnnotationPaused: "true"}, Finalizers: []string{valkeyv1.PVCProtectionFinalizer},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "x"}}},
		Spec: valkeyv1.ValkeyNodeSpec{ClusterName: "c", Shard: 2, ReplicaIndex: 1,
			Restore: &valkeyv1.NodeRestore{Backup: "nightly", SnapshotName: "nightly-2"},
			ServerSpec: valkeyv1.ServerSpec{Image: "valkey:9", Config: map[string]string{"maxmemory": "1gb"},
				Persistence: &valkeyv1.PersistenceSpec{Size: resource.MustParse("1Gi"), StorageClassName: ptr.To("fast")}}},
		Status: valkeyv1.ValkeyNodeStatus{
			Volume:   &valkeyv1.VolumeStatus{ClaimName: "valkey-c-2-1-data", Capacity: "1Gi"},
			Workload: &valkeyv1.WorkloadStatus{Kind: "StatefulSet", PodName: "valkey-c-2-1-0", PodIP: "10.0.0.7", TemplateHash: "h"},
			Topology: &valkeyv1.TopologyStatus{NodeID: "abc", Role: valkeyv1.RoleReplica,
				SavedPoint: &valkeyv1.SavedPoint{Backup: "nightly", BackupUID: "u", Offset: 42}},
		},
	}
	for _, t := range []string{valkeyv1.ConditionVolumeReady, valkeyv1.ConditionVolumeSized, valkeyv1.ConditionVolumeHealthy,
		valkeyv1.ConditionSnapshotReady, valkeyv1.ConditionDrained, valkeyv1.ConditionPaused,
		valkeyv1.ConditionWorkloadReady, valkeyv1.ConditionRollPending, valkeyv1.ConditionClusterJoined, valkeyv1.ConditionConfigApplied} {
		n.Status.Conditions = append(n.Status.Conditions, status.Condition(t, true, "Because", "a message of "+t))
	}
	return n
}

// TestSlimNodeKeepsWhatTheControllerReads: every field the controller reads of a node is the
// same in the cached copy; the rest of the spec, the other controllers' conditions and their
// status are gone.
func TestSlimNodeKeepsWhatTheControllerReads(t *testing.T) {
	full := fullNode()
	out, err := slimNode(full.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	slim := out.(*valkeyv1.ValkeyNode)
	same := []struct {
		what      string
		full, got any
	}{
		{"labels of its claim and snapshots", valkeyv1.NodeLabels(full), valkeyv1.NodeLabels(slim)},
		{"metadata but managedFields", full.Labels, slim.Labels},
		{"annotations (paused)", full.Annotations, slim.Annotations},
		{"finalizers", full.Finalizers, slim.Finalizers},
		{"generation", full.Generation, slim.Generation},
		{"spec.persistence", full.Spec.Persistence, slim.Spec.Persistence},
		{"spec.restore", full.Spec.Restore, slim.Spec.Restore},
		{"status.volume", full.Status.Volume, slim.Status.Volume},
		{"the pod's address", full.Status.Workload.PodIP, slim.Status.Workload.PodIP},
		{"the saved point", full.Status.Topology.SavedPoint, slim.Status.Topology.SavedPoint},
	}
	for _, s := range same {
		if !equality.Semantic.DeepEqual(s.full, s.got) {
			t.Errorf("%s: got %v, want %v", s.what, s.got, s.full)
		}
	}
	for _, c := range readConditions {
		if got, want := status.Get(slim.Status.Conditions, c), status.Get(full.Status.Conditions, c); !equality.Semantic.DeepEqual(got, want) {
			t.Errorf("condition %s: got %v, want %v", c, got, want)
		}
	}
	if len(slim.Status.Conditions) != len(readConditions) {
		t.Errorf("kept %d conditions, want the %d read", len(slim.Status.Conditions), len(readConditions))
	}
	if slim.ManagedFields != nil || slim.Spec.Image != "" || slim.Spec.Config != nil || slim.Status.Topology.NodeID != "" || slim.Status.Workload.PodName != "" {
		t.Errorf("kept what is never read: %+v", slim)
	}
}
