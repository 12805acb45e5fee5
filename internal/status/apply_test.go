package status_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
	"valkey.io/operator/test/envtest"
)

// Two controllers apply their own conditions and sub-structs to one ValkeyNode: both
// survive, and each changes or drops its own without touching the other's.
func TestTwoFieldManagersShareNodeStatus(t *testing.T) {
	ctx, c := startAPI(t)
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ssa"}}); err != nil {
		t.Fatal(err)
	}
	node := &valkeyv1.ValkeyNode{ObjectMeta: metav1.ObjectMeta{Name: "c-0-0", Namespace: "ssa"}}
	if err := c.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	volume := status.NewApplier(c, valkeyv1.FieldManagerVolume)
	volume.Clock = clk
	workload := status.NewApplier(c, valkeyv1.FieldManagerWorkload)
	workload.Clock = clk
	get := func() *valkeyv1.ValkeyNode {
		t.Helper()
		n := &valkeyv1.ValkeyNode{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(node), n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	must(t, volume.ApplyNode(ctx, node, status.VolumeShare{
		Conditions: []metav1.Condition{
			status.Condition(valkeyv1.ConditionVolumeReady, false, valkeyv1.ReasonPending, "waiting for a volume"),
			status.Condition(valkeyv1.ConditionVolumeSized, true, valkeyv1.ReasonSized, ""),
		},
		Volume: &valkeyv1.VolumeStatus{ClaimName: "valkey-c-0-0-data", Phase: "Pending"},
	}))
	must(t, workload.ApplyNode(ctx, node, status.WorkloadShare{
		Conditions: []metav1.Condition{status.Condition(valkeyv1.ConditionWorkloadReady, false, valkeyv1.ReasonWaitingForVolume, "")},
		Workload:   &valkeyv1.WorkloadStatus{Kind: "StatefulSet"},
	}))
	n := get()
	expectConds(t, n, map[string]string{valkeyv1.ConditionVolumeReady: "False", valkeyv1.ConditionVolumeSized: "True", valkeyv1.ConditionWorkloadReady: "False"})
	if n.Status.Volume == nil || n.Status.Volume.ClaimName != "valkey-c-0-0-data" || n.Status.Workload == nil || n.Status.Workload.Kind != "StatefulSet" {
		t.Fatalf("both sub-structs should be present: %+v", n.Status)
	}
	if c := status.Get(n.Status.Conditions, valkeyv1.ConditionVolumeReady); c.ObservedGeneration != n.Generation || !c.LastTransitionTime.Time.Equal(clk.Now()) {
		t.Fatalf("observedGeneration %d at %v, want %d at %v", c.ObservedGeneration, c.LastTransitionTime, n.Generation, clk.Now())
	}

	// The volume controller changes one condition and drops the other; the workload
	// controller's condition and sub-struct are untouched.
	clk.SetTime(clk.Now().Add(time.Minute))
	must(t, volume.ApplyNode(ctx, n, status.VolumeShare{
		Conditions: []metav1.Condition{status.Condition(valkeyv1.ConditionVolumeReady, true, valkeyv1.ReasonBound, "")},
		Volume:     &valkeyv1.VolumeStatus{ClaimName: "valkey-c-0-0-data", Phase: "Bound"},
	}))
	n = get()
	expectConds(t, n, map[string]string{valkeyv1.ConditionVolumeReady: "True", valkeyv1.ConditionWorkloadReady: "False"})
	if status.Get(n.Status.Conditions, valkeyv1.ConditionVolumeSized) != nil {
		t.Fatal("VolumeSized was dropped by its owner and should be gone")
	}
	if got := status.Get(n.Status.Conditions, valkeyv1.ConditionVolumeReady).LastTransitionTime; !got.Time.Equal(clk.Now()) {
		t.Fatalf("VolumeReady changed status: lastTransitionTime %v, want %v", got, clk.Now())
	}
	if n.Status.Workload == nil || n.Status.Workload.Kind != "StatefulSet" || n.Status.Volume.Phase != "Bound" {
		t.Fatalf("unexpected status after the volume controller's change: %+v", n.Status)
	}

	// Re-applying a condition whose status is unchanged keeps its lastTransitionTime; the
	// workload controller leaves status.workload out, which removes it.
	clk.SetTime(clk.Now().Add(time.Minute))
	before := status.Get(n.Status.Conditions, valkeyv1.ConditionWorkloadReady).LastTransitionTime
	must(t, workload.ApplyNode(ctx, n, status.WorkloadShare{
		Conditions: []metav1.Condition{status.Condition(valkeyv1.ConditionWorkloadReady, false, valkeyv1.ReasonCreating, "creating")},
	}))
	n = get()
	if got := status.Get(n.Status.Conditions, valkeyv1.ConditionWorkloadReady); got.LastTransitionTime != before || got.Reason != valkeyv1.ReasonCreating {
		t.Fatalf("unchanged status should keep lastTransitionTime %v, got %v (%s)", before, got.LastTransitionTime, got.Reason)
	}
	if n.Status.Workload != nil {
		t.Fatal("the workload controller dropped status.workload; it should be gone")
	}
	if n.Status.Volume == nil || n.Status.Volume.Phase != "Bound" {
		t.Fatal("status.volume must survive the workload controller's apply")
	}
}

// A share the object already shows is not written again; one the cache shows but that is
// not what was last written (the cache lags a write) is written.
func TestApplyWritesOnlyChanges(t *testing.T) {
	ctx, c := startAPI(t)
	node := &valkeyv1.ValkeyNode{ObjectMeta: metav1.ObjectMeta{Name: "c-0-0", Namespace: "default"}}
	must(t, c.Create(ctx, node))
	a := status.NewApplier(c, valkeyv1.FieldManagerTopology)
	joined := status.TopologyShare{Conditions: []metav1.Condition{status.Condition(valkeyv1.ConditionClusterJoined, true, valkeyv1.ReasonJoined, "primary")}}
	meeting := status.TopologyShare{Conditions: []metav1.Condition{status.Condition(valkeyv1.ConditionClusterJoined, false, valkeyv1.ReasonMeeting, "")}}
	read := func() *valkeyv1.ValkeyNode {
		t.Helper()
		n := &valkeyv1.ValkeyNode{}
		must(t, c.Get(ctx, client.ObjectKeyFromObject(node), n))
		return n
	}

	stale := read()
	must(t, a.ApplyNode(ctx, stale, joined))
	fresh := read()
	must(t, a.ApplyNode(ctx, fresh, joined))
	if again := read(); again.ResourceVersion != fresh.ResourceVersion {
		t.Fatalf("an unchanged share was written again: resourceVersion %s → %s", fresh.ResourceVersion, again.ResourceVersion)
	}
	// Meeting is written; then Joined, judged against the read taken before (it shows
	// Joined), is still written, since Meeting was written last.
	must(t, a.ApplyNode(ctx, fresh, meeting))
	must(t, a.ApplyNode(ctx, fresh, joined))
	if got := status.Get(read().Status.Conditions, valkeyv1.ConditionClusterJoined); got == nil || got.Reason != valkeyv1.ReasonJoined {
		t.Fatalf("ClusterJoined %+v, want Joined", got)
	}

	// A condition that carries its own observedGeneration keeps it after the generation
	// moved on (a decision for an earlier generation is never re-stamped as current), and
	// is not written again when it is shown as it is.
	n := read()
	n.Spec.Image = "valkey/valkey:next"
	must(t, c.Update(ctx, n))
	n = read()
	old := status.Condition(valkeyv1.ConditionRollApproved, true, valkeyv1.ReasonApproved, "replica: safe to restart")
	old.ObservedGeneration = n.Generation - 1
	approved := status.TopologyShare{Conditions: []metav1.Condition{status.Condition(valkeyv1.ConditionClusterJoined, true, valkeyv1.ReasonJoined, "primary"), old}}
	must(t, a.ApplyNode(ctx, n, approved))
	n = read()
	if got := status.Get(n.Status.Conditions, valkeyv1.ConditionRollApproved); got == nil || got.ObservedGeneration != n.Generation-1 ||
		status.IsCurrentTrue(n, n.Status.Conditions, valkeyv1.ConditionRollApproved) {
		t.Fatalf("RollApproved %+v at generation %d: want it kept at generation %d", got, n.Generation, n.Generation-1)
	}
	if got := status.Get(n.Status.Conditions, valkeyv1.ConditionClusterJoined); got.ObservedGeneration != n.Generation {
		t.Fatalf("ClusterJoined at generation %d, want %d", got.ObservedGeneration, n.Generation)
	}
	must(t, a.ApplyNode(ctx, n, approved))
	if again := read(); again.ResourceVersion != n.ResourceVersion {
		t.Fatalf("an unchanged share with an earlier generation was written again")
	}

	// A ValkeyCluster's zero counters are written, not left out.
	vc := &valkeyv1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default"}, Spec: valkeyv1.ValkeyClusterSpec{Shards: 1}}
	must(t, c.Create(ctx, vc))
	must(t, a.ApplyCluster(ctx, vc, valkeyv1.ValkeyClusterStatus{Shards: 1, Nodes: 0,
		Conditions: []metav1.Condition{status.Condition(valkeyv1.ConditionReady, false, valkeyv1.ReasonNotReady, "")}}))
	var u unstructured.Unstructured
	u.SetGroupVersionKind(valkeyv1.GroupVersion.WithKind("ValkeyCluster"))
	must(t, c.Get(ctx, client.ObjectKeyFromObject(vc), &u))
	if n, found, _ := unstructured.NestedInt64(u.Object, "status", "nodes"); !found || n != 0 {
		t.Fatalf("status.nodes: found %v, %d; want 0 written", found, n)
	}
}

// startAPI starts a real API server for one test and returns a client of it.
func startAPI(t *testing.T) (context.Context, client.Client) {
	t.Helper()
	env, err := envtest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return context.Background(), c
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func expectConds(t *testing.T, n *valkeyv1.ValkeyNode, want map[string]string) {
	t.Helper()
	for typ, s := range want {
		c := status.Get(n.Status.Conditions, typ)
		if c == nil || string(c.Status) != s {
			t.Fatalf("condition %s: got %+v, want status %s", typ, c, s)
		}
	}
}
