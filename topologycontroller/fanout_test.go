package topologycontroller

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/test/envtest"
)

// A round creates nodes only for the cluster it read as the API server still has it: not for
// one deleted, being deleted or re-created under its name since (its cache read came first).
func TestCreateNodesOnlyForTheLiveCluster(t *testing.T) {
	scheme, err := envtest.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	read := &valkeyv1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", UID: "read"}}
	deleting := read.DeepCopy()
	now := metav1.Now()
	deleting.DeletionTimestamp, deleting.Finalizers = &now, []string{"hold"}
	recreated := read.DeepCopy()
	recreated.UID = "another"
	for _, tc := range []struct {
		name string
		now  *valkeyv1.ValkeyCluster // nil: gone
		want int
	}{
		{"as read", read, 1},
		{"gone", nil, 0},
		{"being deleted", deleting, 0},
		{"re-created under its name", recreated, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := fake.NewClientBuilder().WithScheme(scheme)
			if tc.now != nil {
				b = b.WithObjects(tc.now.DeepCopy())
			}
			c := b.Build()
			r := &Reconciler{Client: c, APIReader: c}
			n := &valkeyv1.ValkeyNode{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c-0-0"}}
			created, err := r.createNodes(context.Background(), read, []*valkeyv1.ValkeyNode{n})
			if err != nil {
				t.Fatal(err)
			}
			var list valkeyv1.ValkeyNodeList
			if err := c.List(context.Background(), &list, client.InNamespace("ns")); err != nil {
				t.Fatal(err)
			}
			if len(created) != tc.want || len(list.Items) != tc.want {
				t.Errorf("created %d nodes (%d in the API), want %d", len(created), len(list.Items), tc.want)
			}
		})
	}
}
