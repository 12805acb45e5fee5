package volumecontroller

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
	"valkey.io/operator/internal/volumeusage"
)

// AnnotationAutoGrownTo on a claim is the size persistence.autoGrow last grew it to: the
// claim's request while it is above persistence.size because of it (see desiredSize).
const AnnotationAutoGrownTo = "valkey.io/auto-grown-to"

// AnnotationAutoGrownFrom on a claim is the file system's capacity in bytes, as measured in
// the pod, when autoGrow last grew it: the next growth waits for a figure of a larger file
// system, so a growth is never repeated on a figure of the old size.
const AnnotationAutoGrownFrom = "valkey.io/auto-grown-from-bytes"

// growStep is the quantum sizes are rounded up to.
const growStep = 1 << 20

// desiredSize is what the claim should request: persistence.size, or the size autoGrow grew
// it to when that is larger. A size raised by hand past the grown one takes over.
func desiredSize(node *valkeyv1.ValkeyNode, claim *corev1.PersistentVolumeClaim) (resource.Quantity, bool) {
	floor := node.Spec.Persistence.Size
	grown, ok := grownPast(node, claim)
	if !ok || node.Spec.Persistence.AutoGrow == nil {
		return floor, false
	}
	if limit := node.Spec.Persistence.AutoGrow.MaxSize; grown.Cmp(limit) > 0 {
		grown = limit // an annotation edited by hand never takes a claim past maxSize
		if grown.Cmp(floor) <= 0 {
			return floor, false
		}
	}
	return grown, true
}

// grownTo is status.volume.autoGrownTo: the size autoGrow grew the claim to, while it is
// above persistence.size.
func grownTo(node *valkeyv1.ValkeyNode, claim *corev1.PersistentVolumeClaim) string {
	if grown, ok := grownPast(node, claim); ok {
		return grown.String()
	}
	return ""
}

// grownPast is the size the claim's annotation says autoGrow grew it to, when that is more
// than persistence.size.
func grownPast(node *valkeyv1.ValkeyNode, claim *corev1.PersistentVolumeClaim) (resource.Quantity, bool) {
	if claim == nil {
		return resource.Quantity{}, false
	}
	grown, err := resource.ParseQuantity(claim.Annotations[AnnotationAutoGrownTo])
	if err != nil || grown.Cmp(node.Spec.Persistence.Size) <= 0 {
		return resource.Quantity{}, false
	}
	return grown, true
}

// nextSize is the claim's next size: current plus the increment (a percentage of current or a
// quantity), rounded up to a MiB, never past maxSize.
func nextSize(current resource.Quantity, spec *valkeyv1.AutoGrowSpec) resource.Quantity {
	inc := spec.Increment
	if inc == "" {
		inc = valkeyv1.DefaultAutoGrowIncrement
	}
	cur := current.Value()
	var add int64
	if p, ok := strings.CutSuffix(inc, "%"); ok {
		pct, _ := strconv.ParseInt(p, 10, 64)
		add = cur * pct / 100
	} else if q, err := resource.ParseQuantity(inc); err == nil {
		add = q.Value()
	}
	next := (cur + max(add, 1) + growStep - 1) / growStep * growStep
	if next > spec.MaxSize.Value() {
		next = spec.MaxSize.Value()
	}
	return *resource.NewQuantity(next, resource.BinarySI)
}

// autoGrower remembers which nodes were told, once, that their claim cannot grow further
// (the limit reached, or a class that cannot grow) for the size they are at.
type autoGrower struct {
	mu   sync.Mutex
	told map[types.UID]string
}

// tellOnce reports whether this node was not told this yet (and records that it now is).
func (a *autoGrower) tellOnce(uid types.UID, what string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.told == nil {
		a.told = map[types.UID]string{}
	}
	if a.told[uid] == what {
		return false
	}
	a.told[uid] = what
	return true
}

// autoGrow grows a bound claim by the increment when the published figure is above the
// threshold. It waits until the last growth is over: the claim has the capacity it asks for
// (VolumeSized True) and the figure was taken after VolumeSized last became True, so the
// file system the pod measured is the grown one.
func (r *Reconciler) autoGrow(ctx context.Context, node *valkeyv1.ValkeyNode, claim *corev1.PersistentVolumeClaim, class classRef, fig *volumeusage.Figure) error {
	spec := node.Spec.Persistence.AutoGrow
	if spec == nil || fig == nil || claim.Status.Phase != corev1.ClaimBound || fig.Percent() < spec.Threshold() {
		return nil
	}
	sized := status.Get(node.Status.Conditions, valkeyv1.ConditionVolumeSized)
	if sized == nil || sized.Status != metav1.ConditionTrue || !fig.At.After(sized.LastTransitionTime.Time) {
		return nil
	}
	current, _ := storage(claim.Spec.Resources.Requests)
	capacity, ok := storage(claim.Status.Capacity)
	if !ok || capacity.Cmp(current) < 0 || !fileSystemGrew(claim, fig) {
		return nil
	}
	if capacity.Cmp(current) > 0 {
		current = capacity // the provider rounded up: grow from what the volume has
	}
	used := fmt.Sprintf("volume %d%% used (%s of %s), above the threshold of %d%%", fig.Percent(),
		volumeusage.Bytes(fig.UsedBytes), volumeusage.Bytes(fig.CapacityBytes), spec.Threshold())
	if current.Cmp(spec.MaxSize) >= 0 {
		if r.grower.tellOnce(node.UID, "limit "+current.String()) {
			r.Recorder.Eventf(node, claim, corev1.EventTypeWarning, valkeyv1.EventAutoGrowLimitReached, "AutoGrow",
				"%s: claim %s is at persistence.autoGrow.maxSize %s and grows no further; raise maxSize, or free space",
				used, claim.Name, spec.MaxSize.String())
		}
		return nil
	}
	if refused := expansionRefusal(claim, class); refused != "" {
		if r.grower.tellOnce(node.UID, "class "+class.Name) {
			r.Recorder.Eventf(node, claim, corev1.EventTypeWarning, valkeyv1.EventExpansionNotSupported, "AutoGrow",
				"%s, but the claim cannot grow: %s", used, refused)
		}
		return nil
	}
	next := nextSize(current, spec)
	if err := r.growClaim(ctx, claim, next, fig.CapacityBytes); err != nil {
		if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
			// Refused (a quota, an admission policy): said once per size, tried again at
			// the next figure.
			if r.grower.tellOnce(node.UID, "refused "+next.String()) {
				r.Recorder.Eventf(node, claim, corev1.EventTypeWarning, valkeyv1.EventResizeFailed, "AutoGrow",
					"%s, but the API server refused to grow claim %s to %s: %v", used, claim.Name, next.String(), err)
			}
			return nil
		}
		return err
	}
	autoGrows.Inc()
	r.Recorder.Eventf(node, claim, corev1.EventTypeNormal, valkeyv1.EventAutoGrowing, "AutoGrow",
		"%s: growing claim %s from %s to %s (maxSize %s)", used, claim.Name, current.String(), next.String(), spec.MaxSize.String())
	return nil
}

// fileSystemGrew tells whether the figure is of a file system larger than the one the last
// growth started from (true before any growth).
func fileSystemGrew(claim *corev1.PersistentVolumeClaim, fig *volumeusage.Figure) bool {
	from, err := strconv.ParseInt(claim.Annotations[AnnotationAutoGrownFrom], 10, 64)
	return err != nil || fig.CapacityBytes > from
}

// growClaim raises the claim's request to size and records it as grown by autoGrow from a
// file system of fsBytes, in one patch with an optimistic lock.
func (r *Reconciler) growClaim(ctx context.Context, claim *corev1.PersistentVolumeClaim, size resource.Quantity, fsBytes int64) error {
	base := claim.DeepCopy()
	if claim.Annotations == nil {
		claim.Annotations = map[string]string{}
	}
	claim.Annotations[AnnotationAutoGrownTo] = size.String()
	claim.Annotations[AnnotationAutoGrownFrom] = strconv.FormatInt(fsBytes, 10)
	claim.Spec.Resources.Requests[corev1.ResourceStorage] = size.DeepCopy()
	if err := r.Patch(ctx, claim, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("grow claim %s to %s: %w", claim.Name, size.String(), err)
	}
	return nil
}
