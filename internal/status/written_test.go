package status_test

import (
	"context"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// countApplies wraps c so that every status apply sent to the API server is counted.
func countApplies(c client.Client, n *atomic.Int32) client.Client {
	return interceptor.NewClient(c.(client.WithWatch), interceptor.Funcs{
		SubResourceApply: func(ctx context.Context, c client.Client, sub string, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
			n.Add(1)
			return c.SubResource(sub).Apply(ctx, obj, opts...)
		},
	})
}

// A share written once is not written again while the cache still shows the object as it
// was before that write (the controller's own events bring it back before its cache shows
// the write), nor by an Applier that starts (a restarted controller) and reads the object
// showing it. A different share is written whatever the read shows.
func TestApplyTrustsItsOwnLastWrite(t *testing.T) {
	ctx, c := startAPI(t)
	node := &valkeyv1.ValkeyNode{ObjectMeta: metav1.ObjectMeta{Name: "c-0-0", Namespace: "default"}}
	must(t, c.Create(ctx, node))
	var applies atomic.Int32
	counted := countApplies(c, &applies)
	read := func() *valkeyv1.ValkeyNode {
		t.Helper()
		n := &valkeyv1.ValkeyNode{}
		must(t, c.Get(ctx, client.ObjectKeyFromObject(node), n))
		return n
	}
	creating := status.WorkloadShare{Conditions: []metav1.Condition{
		status.Condition(valkeyv1.ConditionWorkloadReady, false, valkeyv1.ReasonCreating, "waiting for the workload to create the pod"),
		status.Condition(valkeyv1.ConditionRollPending, false, valkeyv1.ReasonUpToDate, "no workload yet"),
	}}
	waiting := status.WorkloadShare{Conditions: []metav1.Condition{
		status.Condition(valkeyv1.ConditionWorkloadReady, false, valkeyv1.ReasonWaitingForVolume, "waiting"),
		status.Condition(valkeyv1.ConditionRollPending, false, valkeyv1.ReasonUpToDate, "no workload yet"),
	}}
	expect := func(want int32, what string) {
		t.Helper()
		if got := applies.Load(); got != want {
			t.Fatalf("%s: %d status applies, want %d", what, got, want)
		}
	}

	a := status.NewApplier(counted, valkeyv1.FieldManagerWorkload)
	stale := read()
	must(t, a.ApplyNode(ctx, stale, creating))
	must(t, a.ApplyNode(ctx, stale, creating))
	must(t, a.ApplyNode(ctx, stale, creating))
	expect(1, "the same share judged against a read taken before it was written")

	restarted := status.NewApplier(counted, valkeyv1.FieldManagerWorkload)
	must(t, restarted.ApplyNode(ctx, read(), creating))
	expect(1, "a restarted Applier, the object showing the share")

	// The stale read shows no share at all: a different share is written, and so is the
	// first one again after it.
	must(t, restarted.ApplyNode(ctx, stale, waiting))
	must(t, restarted.ApplyNode(ctx, read(), creating))
	expect(3, "a different share, then the first one again")
	if got := status.Get(read().Status.Conditions, valkeyv1.ConditionWorkloadReady); got == nil || got.Reason != valkeyv1.ReasonCreating {
		t.Fatalf("WorkloadReady %+v, want Creating", got)
	}
}

// SnapshotReady, which the volume controller reports only while a backup's point is saved
// on the node, is its own: a restarted volume Applier whose share leaves it out removes it,
// although the node shows every other condition of the share.
func TestRestartedApplierDropsSnapshotReady(t *testing.T) {
	ctx, c := startAPI(t)
	node := &valkeyv1.ValkeyNode{ObjectMeta: metav1.ObjectMeta{Name: "c-0-0", Namespace: "default"}}
	must(t, c.Create(ctx, node))
	volume := []metav1.Condition{
		status.Condition(valkeyv1.ConditionVolumeReady, true, valkeyv1.ReasonBound, "bound"),
		status.Condition(valkeyv1.ConditionVolumeSized, true, valkeyv1.ReasonSized, "sized"),
	}
	withSnapshot := status.VolumeShare{Conditions: append(append([]metav1.Condition(nil), volume...),
		status.Condition(valkeyv1.ConditionSnapshotReady, true, valkeyv1.ReasonSnapshotReady, "ready"))}
	must(t, status.NewApplier(c, valkeyv1.FieldManagerVolume).ApplyNode(ctx, node, withSnapshot))
	must(t, c.Get(ctx, client.ObjectKeyFromObject(node), node))

	must(t, status.NewApplier(c, valkeyv1.FieldManagerVolume).ApplyNode(ctx, node, status.VolumeShare{Conditions: volume}))
	must(t, c.Get(ctx, client.ObjectKeyFromObject(node), node))
	if got := status.Get(node.Status.Conditions, valkeyv1.ConditionSnapshotReady); got != nil {
		t.Fatalf("SnapshotReady %+v is still there after its owner left it out", got)
	}
}
