package status_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
	"valkey.io/operator/test/envtest"
)

// Two controllers apply their own conditions and sub-structs to one ValkeyNode: both
// survive, and each changes or drops its own without touching the other's.
func TestTwoFieldManagersShareNodeStatus(t *testing.T) {
	env, err := envtest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.Stop() }()
	ctx := context.Background()
	c, err := client.New(env.Config, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ssa"}}); err != nil {
		t.Fatal(err)
	}
	node := &v1.ValkeyNode{ObjectMeta: metav1.ObjectMeta{Name: "c-0-0", Namespace: "ssa"}}
	if err := c.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	volume := status.Applier{Client: c, FieldManager: v1.FieldManagerVolume}
	workload := status.Applier{Client: c, FieldManager: v1.FieldManagerWorkload}
	get := func() *v1.ValkeyNode {
		t.Helper()
		n := &v1.ValkeyNode{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(node), n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	must(t, volume.Apply(ctx, node, nil, status.Status{
		Conditions: []metav1.Condition{
			status.Condition(v1.ConditionVolumeReady, false, v1.ReasonPending, "waiting for a volume"),
			status.Condition(v1.ConditionVolumeSized, true, v1.ReasonSized, ""),
		},
		Fields: map[string]any{"volume": &v1.VolumeStatus{ClaimName: "valkey-c-0-0-data", Phase: "Pending"}},
	}))
	must(t, workload.Apply(ctx, node, nil, status.Status{
		Conditions: []metav1.Condition{status.Condition(v1.ConditionWorkloadReady, false, v1.ReasonWaitingForVolume, "")},
		Fields:     map[string]any{"workload": &v1.WorkloadStatus{Kind: "StatefulSet"}},
	}))
	n := get()
	expectConds(t, n, map[string]string{v1.ConditionVolumeReady: "False", v1.ConditionVolumeSized: "True", v1.ConditionWorkloadReady: "False"})
	if n.Status.Volume == nil || n.Status.Volume.ClaimName != "valkey-c-0-0-data" || n.Status.Workload == nil || n.Status.Workload.Kind != "StatefulSet" {
		t.Fatalf("both sub-structs should be present: %+v", n.Status)
	}
	if c := status.Get(n.Status.Conditions, v1.ConditionVolumeReady); c.ObservedGeneration != n.Generation {
		t.Fatalf("observedGeneration %d, want %d", c.ObservedGeneration, n.Generation)
	}

	// The volume controller changes one condition and drops the other; the workload
	// controller's condition and sub-struct are untouched.
	time.Sleep(1100 * time.Millisecond) // lastTransitionTime has a one-second resolution
	must(t, volume.Apply(ctx, n, n.Status.Conditions, status.Status{
		Conditions: []metav1.Condition{
			status.Condition(v1.ConditionVolumeReady, true, v1.ReasonBound, ""),
		},
		Fields: map[string]any{"volume": &v1.VolumeStatus{ClaimName: "valkey-c-0-0-data", Phase: "Bound"}},
	}))
	n = get()
	expectConds(t, n, map[string]string{v1.ConditionVolumeReady: "True", v1.ConditionWorkloadReady: "False"})
	if status.Get(n.Status.Conditions, v1.ConditionVolumeSized) != nil {
		t.Fatal("VolumeSized was dropped by its owner and should be gone")
	}
	if n.Status.Workload == nil || n.Status.Workload.Kind != "StatefulSet" || n.Status.Volume.Phase != "Bound" {
		t.Fatalf("unexpected status after the volume controller's change: %+v", n.Status)
	}

	// Re-applying a condition whose status is unchanged keeps its lastTransitionTime; the
	// workload controller leaves status.workload out, which removes it.
	must(t, workload.Apply(ctx, n, n.Status.Conditions, status.Status{
		Conditions: []metav1.Condition{
			status.Condition(v1.ConditionWorkloadReady, false, v1.ReasonCreating, "creating"),
		},
	}))
	before := status.Get(n.Status.Conditions, v1.ConditionWorkloadReady).LastTransitionTime
	n = get()
	if got := status.Get(n.Status.Conditions, v1.ConditionWorkloadReady); got.LastTransitionTime != before || got.Reason != v1.ReasonCreating {
		t.Fatalf("unchanged status should keep lastTransitionTime %v, got %v (%s)", before, got.LastTransitionTime, got.Reason)
	}
	if n.Status.Workload != nil {
		t.Fatal("the workload controller dropped status.workload; it should be gone")
	}
	if n.Status.Volume == nil || n.Status.Volume.Phase != "Bound" {
		t.Fatal("status.volume must survive the workload controller's apply")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func expectConds(t *testing.T, n *v1.ValkeyNode, want map[string]string) {
	t.Helper()
	for typ, s := range want {
		c := status.Get(n.Status.Conditions, typ)
		if c == nil || string(c.Status) != s {
			t.Fatalf("condition %s: got %+v, want status %s", typ, c, s)
		}
	}
}
