// Package status is the one status policy of the three controllers. Each controller owns a
// share of a ValkeyNode's status (its conditions and its sub-struct) and the topology
// controller owns all of a ValkeyCluster's status. A share is written by server-side apply
// with the controller's own field manager, as a typed apply configuration that holds only
// that share: whatever the share leaves out is removed, and what other managers own is never
// touched. A share is not written again when it is what the controller last wrote there, or,
// for an object it has not written since it started, when the object as last read shows it.
package status

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// Applier applies status for one field manager.
type Applier struct {
	Client       client.Client
	FieldManager string
	// Clock gives lastTransitionTime; the real clock when nil.
	Clock clock.PassiveClock
	// written remembers what was last written to each object (see NewApplier).
	written *written
}

// NewApplier returns the Applier of a controller. It remembers what it last wrote to each
// object, so that neither a cache not yet updated with that write nor the controller's own
// events bring the same write again, and a status that matches such a cache by chance is
// still written: an Applier without this memory trusts the cache alone.
func NewApplier(c client.Client, fieldManager string) Applier {
	return Applier{Client: c, FieldManager: fieldManager, written: newWritten()}
}

// ApplyNode writes share as the manager's part of n's status, unless it is what this
// Applier last wrote there for n's generation, or, when it wrote nothing there since it
// started, n (as last read) already shows it.
func (a Applier) ApplyNode(ctx context.Context, n *valkeyv1.ValkeyNode, share NodeShare) error {
	want := share.nodeStatus()
	fp := fingerprint(n.Generation, want)
	if a.unchanged(n.UID, fp, func() bool { return UnchangedNode(n, share) }) {
		return nil
	}
	want.Conditions = stamp(n.Status.Conditions, want.Conditions, n.Generation, a.now())
	return a.apply(ctx, n, fp, newApplyConfig("ValkeyNode", n, want))
}

// ApplyCluster writes st as vc's status (the topology controller owns all of it), unless it
// is what this Applier last wrote there for vc's generation, or, when it wrote nothing there
// since it started, vc (as last read) already shows it. st.ObservedGeneration is set here.
func (a Applier) ApplyCluster(ctx context.Context, vc *valkeyv1.ValkeyCluster, st valkeyv1.ValkeyClusterStatus) error {
	st.ObservedGeneration = vc.Generation
	fp := fingerprint(vc.Generation, st)
	if a.unchanged(vc.UID, fp, func() bool { return UnchangedCluster(vc, st) }) {
		return nil
	}
	st.Conditions = stamp(vc.Status.Conditions, st.Conditions, vc.Generation, a.now())
	return a.apply(ctx, vc, fp, newApplyConfig("ValkeyCluster", vc, clusterStatusOf(st)))
}

// unchanged tells whether the share of fingerprint fp needs no write to the object uid:
// what this Applier remembers having written there decides; without such a memory, shown
// tells whether the object as last read shows the share.
func (a Applier) unchanged(uid types.UID, fp uint64, shown func() bool) bool {
	if remembered, same := a.written.recall(uid, fp); remembered {
		return same
	}
	return shown()
}

func (a Applier) apply(ctx context.Context, obj client.Object, fp uint64, ac *applyConfig) error {
	unlock := a.written.lock(obj.GetUID())
	defer unlock()
	err := a.Client.Status().Apply(ctx, ac, client.FieldOwner(a.FieldManager), client.ForceOwnership)
	if err != nil {
		a.written.forget(obj.GetUID())
		return fmt.Errorf("apply status of %s %s/%s as %s: %w", ac.Kind, obj.GetNamespace(), obj.GetName(), a.FieldManager, err)
	}
	a.written.remember(obj.GetUID(), fp)
	return nil
}

func (a Applier) now() metav1.Time {
	c := a.Clock
	if c == nil {
		c = clock.RealClock{}
	}
	return metav1.NewTime(c.Now().Truncate(time.Second))
}

// stamp returns desired with observedGeneration set to generation and lastTransitionTime
// kept from current when a condition's status is unchanged (now otherwise). A condition
// that carries its own observedGeneration keeps it: a decision made for an earlier
// generation (a cached approval) is never re-stamped as one for the current generation.
func stamp(current, desired []metav1.Condition, generation int64, now metav1.Time) []metav1.Condition {
	out := make([]metav1.Condition, 0, len(desired))
	for _, c := range desired {
		if c.ObservedGeneration == 0 {
			c.ObservedGeneration = generation
		}
		if c.Reason == "" {
			c.Reason = "Unknown"
		}
		if old := Get(current, c.Type); old != nil && old.Status == c.Status && !old.LastTransitionTime.IsZero() {
			c.LastTransitionTime = old.LastTransitionTime
		} else {
			c.LastTransitionTime = now
		}
		out = append(out, c)
	}
	return out
}
