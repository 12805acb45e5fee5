package volumecontroller

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

func testNode(owner bool) *valkeyv1.ValkeyNode {
	n := &valkeyv1.ValkeyNode{
		ObjectMeta: metav1.ObjectMeta{Name: "db-2-1", Namespace: "prod", UID: "node-uid"},
		Spec: valkeyv1.ValkeyNodeSpec{
			ClusterName: "db", Shard: 2, ReplicaIndex: 1,
			ServerSpec: valkeyv1.ServerSpec{
				Persistence: &valkeyv1.PersistenceSpec{Size: resource.MustParse("10Gi"), StorageClassName: ptr.To("gp3")},
			},
		},
	}
	if owner {
		n.OwnerReferences = []metav1.OwnerReference{{APIVersion: "valkey.io/v1alpha1", Kind: "ValkeyCluster", Name: "db", UID: "cluster-uid"}}
	}
	return n
}

func TestBuildClaim(t *testing.T) {
	tests := []struct {
		name     string
		node     *valkeyv1.ValkeyNode
		identity string
		class    *string
	}{
		{"node of a cluster", testNode(true), "cluster-uid/db-2-1", ptr.To("gp3")},
		{"node outside a cluster owner", testNode(false), "node-uid/db-2-1", ptr.To("gp3")},
		{"default class", func() *valkeyv1.ValkeyNode {
			n := testNode(true)
			n.Spec.Persistence.StorageClassName = nil
			return n
		}(), "cluster-uid/db-2-1", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pvc := BuildClaim(tt.node)
			if pvc.Name != "valkey-db-2-1-data" || pvc.Namespace != "prod" {
				t.Errorf("name %s/%s", pvc.Namespace, pvc.Name)
			}
			if got := pvc.Annotations[valkeyv1.AnnotationClaimIdentity]; got != tt.identity {
				t.Errorf("identity %q, want %q", got, tt.identity)
			}
			wantLabels := map[string]string{
				valkeyv1.LabelCluster: "db", valkeyv1.LabelShard: "2", valkeyv1.LabelReplica: "1", valkeyv1.LabelNode: "db-2-1",
				valkeyv1.LabelManagedBy: valkeyv1.ManagedByValue, valkeyv1.LabelName: valkeyv1.NameValue,
			}
			if !reflect.DeepEqual(pvc.Labels, wantLabels) {
				t.Errorf("labels %v", pvc.Labels)
			}
			if len(pvc.OwnerReferences) != 0 {
				t.Errorf("ownerReferences %v: the claim must outlive its node", pvc.OwnerReferences)
			}
			if !reflect.DeepEqual(pvc.Spec.StorageClassName, tt.class) {
				t.Errorf("class %v, want %v", pvc.Spec.StorageClassName, tt.class)
			}
			if got := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; got.String() != "10Gi" {
				t.Errorf("size %s", got.String())
			}
			if !reflect.DeepEqual(pvc.Spec.AccessModes, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}) {
				t.Errorf("access modes %v", pvc.Spec.AccessModes)
			}
		})
	}
}

func TestClaimOwnership(t *testing.T) {
	node := testNode(true)
	claim := func(ann map[string]string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Annotations: ann}}
	}
	tests := []struct {
		name  string
		claim *corev1.PersistentVolumeClaim
		want  ownership
	}{
		{"same identity", claim(map[string]string{valkeyv1.AnnotationClaimIdentity: "cluster-uid/db-2-1"}), owned},
		{"released by a namesake", claim(map[string]string{valkeyv1.AnnotationClaimIdentity: "old-uid/db-2-1", valkeyv1.AnnotationClaimReleased: "x"}), adoptable},
		{"released by another node", claim(map[string]string{valkeyv1.AnnotationClaimIdentity: "old-uid/db-0-0", valkeyv1.AnnotationClaimReleased: "x"}), foreign},
		{"another cluster, not released", claim(map[string]string{valkeyv1.AnnotationClaimIdentity: "old-uid/db-2-1"}), foreign},
		{"no identity", claim(nil), foreign},
		{"released without identity", claim(map[string]string{valkeyv1.AnnotationClaimReleased: "x"}), foreign},
	}
	for _, tt := range tests {
		if got := claimOwnership(node, tt.claim); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestNodeForClaim(t *testing.T) {
	tests := []struct {
		claim string
		node  string
		ok    bool
	}{
		{"valkey-db-0-1-data", "db-0-1", true},
		{"valkey-my-data-0-0-data", "my-data-0-0", true},
		{"data-valkey-0", "", false},
		{"valkey--data", "", false},
		{"valkey-db-0-1", "", false},
	}
	for _, tt := range tests {
		got, ok := nodeForClaim(types.NamespacedName{Namespace: "ns", Name: tt.claim})
		if ok != tt.ok || got.Name != tt.node || (ok && got.Namespace != "ns") {
			t.Errorf("%s: %v %v", tt.claim, got, ok)
		}
		if ok && valkeyv1.ClaimName(got.Name) != tt.claim {
			t.Errorf("%s does not round-trip", tt.claim)
		}
	}
}

func TestDefaultClass(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Hour))
	sc := func(name string, ts metav1.Time, ann map[string]string) storagev1.StorageClass {
		return storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: ts, Annotations: ann}}
	}
	def := map[string]string{annotationDefaultClass: "true"}
	tests := []struct {
		name    string
		classes []storagev1.StorageClass
		want    string
	}{
		{"none", []storagev1.StorageClass{sc("a", t0, nil)}, ""},
		{"one", []storagev1.StorageClass{sc("a", t0, nil), sc("b", t0, def)}, "b"},
		{"beta annotation", []storagev1.StorageClass{sc("a", t0, map[string]string{annotationDefaultClassBeta: "true"})}, "a"},
		{"not true", []storagev1.StorageClass{sc("a", t0, map[string]string{annotationDefaultClass: "false"})}, ""},
		{"newest wins", []storagev1.StorageClass{sc("old", t0, def), sc("new", t1, def)}, "new"},
		{"same age: first by name", []storagev1.StorageClass{sc("z", t0, def), sc("m", t0, def)}, "m"},
	}
	for _, tt := range tests {
		got := ""
		if c := defaultClass(tt.classes); c != nil {
			got = c.Name
		}
		if got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}
