package volumecontroller

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// RetryRefusedExpansion is how soon an expansion the API server refused is tried again. What
// refused it may change unseen by the controller: a ResourceQuota raised, or the API server's
// admission, which reads StorageClasses from its own cache, catching up with a class that
// now allows expansion.
const RetryRefusedExpansion = 10 * time.Second

// sized is the VolumeSized verdict for a claim.
type sized struct {
	OK      bool
	Reason  string
	Message string
}

// needsExpansion tells whether the claim requests less than the node asks for.
func needsExpansion(desired resource.Quantity, claim *corev1.PersistentVolumeClaim) bool {
	req, ok := storage(claim.Spec.Resources.Requests)
	return !ok || req.Cmp(desired) < 0
}

// expansionRefusal says why a claim cannot be expanded to the desired size ("" when it can).
func expansionRefusal(claim *corev1.PersistentVolumeClaim, class classRef) string {
	switch {
	case class.None:
		return fmt.Sprintf("claim %s has no StorageClass, so it cannot be expanded", claim.Name)
	case class.Unread:
		return "" // the API server refuses the patch if the class does not allow expansion
	case class.Class == nil:
		return fmt.Sprintf("cannot expand claim %s: %s not found", claim.Name, class.describe())
	case !allowsExpansion(class.Class):
		return fmt.Sprintf("StorageClass %s does not allow volume expansion (allowVolumeExpansion is not true); claim %s keeps its size", class.Name, claim.Name)
	}
	return ""
}

// sizeVerdict maps a claim that belongs to the node to VolumeSized: its capacity against
// the desired size, and the claim's own resize signals while it is smaller. blocked, when
// not nil, is why the claim could not be expanded (it applies while the claim is smaller).
func sizeVerdict(desired resource.Quantity, claim *corev1.PersistentVolumeClaim, blocked *sized) sized {
	req, _ := storage(claim.Spec.Resources.Requests)
	capacity, hasCapacity := storage(claim.Status.Capacity)
	if hasCapacity && capacity.Cmp(desired) >= 0 {
		if req.Cmp(desired) > 0 {
			return sized{true, valkeyv1.ReasonLargerThanRequested, fmt.Sprintf(
				"claim %s requests %s, more than the %s asked for; it is never shrunk (capacity %s)",
				claim.Name, req.String(), desired.String(), capacity.String())}
		}
		return sized{true, valkeyv1.ReasonSized, fmt.Sprintf("claim %s has %s (%s requested)", claim.Name, capacity.String(), desired.String())}
	}
	if blocked != nil {
		return *blocked
	}
	if !hasCapacity {
		if claim.Status.Phase == corev1.ClaimBound {
			return sized{false, valkeyv1.ReasonResizing, fmt.Sprintf("claim %s is bound but reports no capacity yet", claim.Name)}
		}
		return sized{false, valkeyv1.ReasonPending, fmt.Sprintf("claim %s has no capacity until it is bound", claim.Name)}
	}
	if req.Cmp(desired) < 0 {
		return sized{false, valkeyv1.ReasonResizing, fmt.Sprintf(
			"claim %s is %s; it is expanded to %s once it is bound", claim.Name, capacity.String(), desired.String())}
	}
	progress := fmt.Sprintf("claim %s: %s of %s", claim.Name, capacity.String(), desired.String())
	for _, c := range claim.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case corev1.PersistentVolumeClaimControllerResizeError, corev1.PersistentVolumeClaimNodeResizeError:
			return sized{false, valkeyv1.ReasonResizeFailed, fmt.Sprintf("%s, %s: %s", progress, c.Type, c.Message)}
		}
	}
	switch claim.Status.AllocatedResourceStatuses[corev1.ResourceStorage] {
	case corev1.PersistentVolumeClaimControllerResizeInfeasible, corev1.PersistentVolumeClaimNodeResizeInfeasible:
		return sized{false, valkeyv1.ReasonResizeFailed, fmt.Sprintf("%s, resize %s",
			progress, claim.Status.AllocatedResourceStatuses[corev1.ResourceStorage])}
	case corev1.PersistentVolumeClaimNodeResizePending, corev1.PersistentVolumeClaimNodeResizeInProgress:
		return sized{false, valkeyv1.ReasonFileSystemResizePending, progress + ", the file system is grown on the node (the pod must be running)"}
	}
	for _, c := range claim.Status.Conditions {
		if c.Status == corev1.ConditionTrue && c.Type == corev1.PersistentVolumeClaimFileSystemResizePending {
			return sized{false, valkeyv1.ReasonFileSystemResizePending, progress + ", the file system is grown on the node (the pod must be running)"}
		}
	}
	return sized{false, valkeyv1.ReasonResizing, progress + ", the volume is being expanded"}
}

// expand raises the claim's storage request to the node's size in place. Callers check
// first that the claim is bound and its StorageClass allows expansion; the claim is never
// shrunk.
func expand(ctx context.Context, c client.Client, claim *corev1.PersistentVolumeClaim, desired resource.Quantity) error {
	if !needsExpansion(desired, claim) {
		return nil
	}
	base := claim.DeepCopy()
	if claim.Spec.Resources.Requests == nil {
		claim.Spec.Resources.Requests = corev1.ResourceList{}
	}
	claim.Spec.Resources.Requests[corev1.ResourceStorage] = desired.DeepCopy()
	// The optimistic lock makes sure the request grows from what was read, never past a
	// concurrent change.
	if err := c.Patch(ctx, claim, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("expand claim %s to %s: %w", claim.Name, desired.String(), err)
	}
	return nil
}
