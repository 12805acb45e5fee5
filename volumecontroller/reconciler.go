package volumecontroller

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/requeue"
	"valkey.io/operator/internal/status"
	"valkey.io/operator/internal/volumeusage"
)

// +kubebuilder:rbac:groups=valkey.io,resources=valkeynodes,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=valkey.io,resources=valkeynodes/status,verbs=patch
// +kubebuilder:rbac:groups=valkey.io,resources=valkeynodes/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=storage.k8s.io,resources=storageclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=snapshot.storage.k8s.io,resources=volumesnapshots,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=snapshot.storage.k8s.io,resources=volumesnapshotclasses,verbs=get;list;watch
// Leader election: its Lease is in the operator's namespace only, by the Role in
// deploy/volume-controller/rbac/bindings.yaml (no cluster-wide lease rights).

// Reconciler keeps each ValkeyNode's PersistentVolumeClaim and reports it as VolumeReady,
// VolumeSized and status.volume; it snapshots the claim for a backup (SnapshotReady and
// status.volume.snapshot) and creates a restored node's claim from its snapshot.
type Reconciler struct {
	client.Client
	// APIReader reads past the cache: claims without the operator's labels (a conflicting
	// claim) and the final check that a claim is gone before the finalizer goes.
	APIReader client.Reader
	Recorder  events.EventRecorder
	Options   Options
	Status    status.Applier
	// Snapshots reads VolumeSnapshots (the operator's) and VolumeSnapshotClasses; nil when
	// the VolumeSnapshot API is not served, and every snapshot or restore request is then
	// refused with a message saying so.
	Snapshots client.Reader

	// usage holds every node's measured usage (the usage poller writes it).
	usage *usageStore
	// grower remembers what autoGrow told each node once.
	grower autoGrower
}

// Reconcile runs get → (nothing while the node is paused) → ensure finalizer → reconcileDelete / reconcileNormal → one status apply.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	node := &valkeyv1.ValkeyNode{}
	if err := r.Get(ctx, req.NamespacedName, node); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if valkeyv1.NodePaused(node) {
		return ctrl.Result{}, nil // its Paused condition says so; nothing is changed, the finalizer stays
	}
	if node.Spec.Persistence != nil && node.DeletionTimestamp.IsZero() &&
		!controllerutil.ContainsFinalizer(node, valkeyv1.PVCProtectionFinalizer) {
		base := node.DeepCopy()
		controllerutil.AddFinalizer(node, valkeyv1.PVCProtectionFinalizer)
		if err := r.Patch(ctx, node, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
			return requeue.Settle(ctx, fmt.Errorf("add finalizer %s: %w", valkeyv1.PVCProtectionFinalizer, err))
		}
	}

	usage := r.usageReportOf(node)
	if !node.DeletionTimestamp.IsZero() {
		rep, gone, err := r.reconcileDelete(ctx, node)
		if gone {
			return requeue.Settle(ctx, err)
		}
		snap, serr := r.reconcileSnapshot(ctx, node)
		rep.Snapshot = snap
		r.reportUsage(node, usage, &rep)
		return requeue.Settle(ctx, errors.Join(err, serr, client.IgnoreNotFound(r.applyStatus(ctx, node, rep))))
	}
	rep, err := r.reconcileNormal(ctx, node, usage.Figure)
	snap, serr := r.reconcileSnapshot(ctx, node)
	rep.Snapshot = snap
	r.reportUsage(node, usage, &rep)
	res, err := requeue.Settle(ctx, errors.Join(err, serr, client.IgnoreNotFound(r.applyStatus(ctx, node, rep))))
	if err == nil && res.RequeueAfter == 0 {
		res.RequeueAfter = rep.RetryAfter
	}
	return res, err
}

// reconcileNormal makes sure the node's claim exists, belongs to it and is as large as
// asked, and reports it. A node that restores a snapshot uses only the claim made for it
// from that snapshot; any other claim under its name is left as it is (restoreClaimExists).
func (r *Reconciler) reconcileNormal(ctx context.Context, node *valkeyv1.ValkeyNode, fig *volumeusage.Figure) (report, error) {
	if node.Spec.Persistence == nil {
		return ephemeralReport(), nil
	}
	claim, err := r.getClaim(ctx, node)
	if err != nil {
		return notUsableReport(node, classRef{}, valkeyv1.ReasonPending, err.Error()), err
	}
	if claim == nil {
		return r.createClaim(ctx, node)
	}
	class, err := r.resolveClass(ctx, claim.Spec.StorageClassName)
	if err != nil {
		return claimReport(node, claim, class, nil), err
	}
	if snap := restoreSnapshot(node); snap != "" && !madeForRestore(node, claim, snap) {
		return r.restoreClaimExists(node, claim, class, snap), nil
	}

	switch claimOwnership(node, claim) {
	case foreign:
		return r.conflict(node, claim, class), nil
	case adoptable:
		if err := r.adopt(ctx, node, claim); err != nil {
			return claimReport(node, claim, class, nil), err
		}
	}
	if claim.DeletionTimestamp != nil {
		return claimReport(node, claim, class, nil), nil
	}
	if wantsOtherClass(node, claim) {
		return r.reclass(ctx, node, claim, class)
	}
	blocked, err := r.reconcileSize(ctx, node, claim, class)
	if blocked == nil && err == nil {
		err = r.autoGrow(ctx, node, claim, class, fig)
	}
	rep := claimReport(node, claim, class, blocked)
	if blocked != nil && blocked.Reason == valkeyv1.ReasonResizeFailed {
		rep.RetryAfter = RetryRefusedExpansion
	}
	r.recordSizeTransition(node, claim, rep.Sized)
	return rep, err
}

// getClaim reads the node's claim from the cache; nil when there is none.
func (r *Reconciler) getClaim(ctx context.Context, node *valkeyv1.ValkeyNode) (*corev1.PersistentVolumeClaim, error) {
	claim := &corev1.PersistentVolumeClaim{}
	key := client.ObjectKey{Namespace: node.Namespace, Name: valkeyv1.ClaimName(node.Name)}
	if err := r.Get(ctx, key, claim); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("get claim %s: %w", key.Name, err)
	}
	return claim, nil
}

// createClaim creates the node's claim once its StorageClass resolves. A claim that had
// been bound (or lost) and disappeared is recreated empty, with a Warning; one that was
// only pending held no data.
func (r *Reconciler) createClaim(ctx context.Context, node *valkeyv1.ValkeyNode) (report, error) {
	name := valkeyv1.ClaimName(node.Name)
	class, err := r.resolveClass(ctx, node.Spec.Persistence.StorageClassName)
	if err != nil {
		return notUsableReport(node, class, valkeyv1.ReasonCreating, err.Error()), err
	}
	if class.missing() {
		msg := fmt.Sprintf("claim %s is not created until StorageClass %s exists", name, class.Name)
		if class.Name == "" {
			msg = fmt.Sprintf("claim %s is not created: no storageClassName is set and the cluster has no default StorageClass", name)
		}
		return notUsableReport(node, class, valkeyv1.ReasonStorageClassNotFound, msg), nil
	}

	claim := BuildClaim(node)
	if snap := restoreSnapshot(node); snap != "" {
		vs, waits, err := r.restoreSource(ctx, node, snap)
		if vs == nil {
			return notUsableReport(node, class, valkeyv1.ReasonRestoreSourceNotReady, waits), err
		}
		restoreFrom(claim, vs)
	}
	if err := r.Create(ctx, claim); err != nil {
		if apierrors.IsAlreadyExists(err) {
			// Not in the cache: either the cache lags, or the claim lacks the operator's
			// labels (made by someone else). Look at it directly.
			live := &corev1.PersistentVolumeClaim{}
			if gerr := r.APIReader.Get(ctx, client.ObjectKeyFromObject(claim), live); gerr != nil {
				return notUsableReport(node, class, valkeyv1.ReasonCreating, err.Error()), fmt.Errorf("get claim %s: %w", name, gerr)
			}
			if snap := restoreSnapshot(node); snap != "" && !madeForRestore(node, live, snap) {
				return r.restoreClaimExists(node, live, class, snap), nil
			}
			switch claimOwnership(node, live) {
			case foreign:
				return r.conflict(node, live, class), nil
			case adoptable:
				err = r.adopt(ctx, node, live)
			default:
				err = r.restoreLabels(ctx, node, live)
			}
			// The claim (labelled again) enters the cache, and its watch event brings the
			// node back. Meanwhile it is reported as read, as the cache will show it: a
			// cache that lags the claim this controller just created brings no status that
			// goes back and forth (two more writes).
			return newClaimReport(node, live, class), err
		}
		return notUsableReport(node, class, valkeyv1.ReasonCreating, fmt.Sprintf("create claim %s: %v", name, err)),
			fmt.Errorf("create claim %s: %w", name, err)
	}
	// A new node's claim gets no event: its status says the same (status.volume, VolumeReady),
	// and an event per node was a fifth of a fan-out's writes. A claim made again is news.
	if v := node.Status.Volume; v != nil && v.Phase != "" && v.Phase != string(corev1.ClaimPending) {
		r.Recorder.Eventf(node, claim, corev1.EventTypeWarning, valkeyv1.EventClaimRecreated, "RecreateClaim",
			"claim %s disappeared while the node exists; created a new, empty claim of %s", name, node.Spec.Persistence.Size.String())
	}
	// The claim as created (Pending) is reported at once: on a WaitForFirstConsumer class
	// that is VolumeReady=True already, and the claim's own watch event then finds nothing
	// to write.
	return newClaimReport(node, claim, class), nil
}

// newClaimReport reports a claim read from the API server rather than the cache (as created,
// or found past a lagging cache), Pending when it has no phase yet, as the cache will show it.
func newClaimReport(node *valkeyv1.ValkeyNode, claim *corev1.PersistentVolumeClaim, class classRef) report {
	if claim.Status.Phase == "" {
		claim.Status.Phase = corev1.ClaimPending
	}
	return claimReport(node, claim, class, nil)
}

// conflict reports a claim of another identity under the node's claim name; it is never
// adopted or changed.
func (r *Reconciler) conflict(node *valkeyv1.ValkeyNode, claim *corev1.PersistentVolumeClaim, class classRef) report {
	owner := claim.Annotations[valkeyv1.AnnotationClaimIdentity]
	if owner == "" {
		owner = "no identity"
	}
	msg := fmt.Sprintf("claim %s exists but belongs to %s, not %s: it is not adopted; delete or rename it, or mark it with %s to let this node reuse it",
		claim.Name, owner, Identity(node), valkeyv1.AnnotationClaimReleased)
	if cur := status.Get(node.Status.Conditions, valkeyv1.ConditionVolumeReady); cur == nil || cur.Reason != valkeyv1.ReasonClaimConflict {
		r.Recorder.Eventf(node, claim, corev1.EventTypeWarning, valkeyv1.EventClaimConflict, "CheckClaim", "%s", msg)
	}
	return notUsableReport(node, class, valkeyv1.ReasonClaimConflict, msg)
}

// adopt takes over a claim released by an earlier node of the same name: it gets this
// node's identity and labels, and loses its release mark.
func (r *Reconciler) adopt(ctx context.Context, node *valkeyv1.ValkeyNode, claim *corev1.PersistentVolumeClaim) error {
	base := claim.DeepCopy()
	previous := claim.Annotations[valkeyv1.AnnotationClaimIdentity]
	claim.Annotations[valkeyv1.AnnotationClaimIdentity] = Identity(node)
	delete(claim.Annotations, valkeyv1.AnnotationClaimReleased)
	setLabels(claim, valkeyv1.NodeLabels(node))
	if err := r.Patch(ctx, claim, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("adopt claim %s: %w", claim.Name, err)
	}
	r.Recorder.Eventf(node, claim, corev1.EventTypeNormal, valkeyv1.EventClaimAdopted, "AdoptClaim",
		"adopted retained claim %s (released by %s) with its data", claim.Name, previous)
	return nil
}

// restoreLabels puts the node's labels back on its own claim (someone removed them, which
// hides the claim from the label-filtered cache).
func (r *Reconciler) restoreLabels(ctx context.Context, node *valkeyv1.ValkeyNode, claim *corev1.PersistentVolumeClaim) error {
	want := valkeyv1.NodeLabels(node)
	if hasLabels(claim, want) {
		return nil
	}
	base := claim.DeepCopy()
	setLabels(claim, want)
	if err := r.Patch(ctx, claim, client.MergeFrom(base)); err != nil {
		return fmt.Errorf("restore labels of claim %s: %w", claim.Name, err)
	}
	return nil
}

// hasLabels tells whether a claim carries every one of labels already.
func hasLabels(claim *corev1.PersistentVolumeClaim, labels map[string]string) bool {
	for k, v := range labels {
		if claim.Labels[k] != v {
			return false
		}
	}
	return true
}

// setLabels sets labels on a claim, keeping its other labels.
func setLabels(claim *corev1.PersistentVolumeClaim, labels map[string]string) {
	if claim.Labels == nil {
		claim.Labels = map[string]string{}
	}
	for k, v := range labels {
		claim.Labels[k] = v
	}
}

// reconcileSize expands a bound claim that requests less than the node's size, when its
// StorageClass allows it. It returns why the claim could not be expanded (nil otherwise):
// ExpansionNotSupported for the class, ResizeFailed when the API server refused the patch
// (a quota, for instance). It never shrinks a claim, and a refused or failing resize is
// only reported.
func (r *Reconciler) reconcileSize(ctx context.Context, node *valkeyv1.ValkeyNode, claim *corev1.PersistentVolumeClaim, class classRef) (*sized, error) {
	desired, _ := desiredSize(node, claim)
	if !needsExpansion(desired, claim) {
		return nil, nil
	}
	if refused := expansionRefusal(claim, class); refused != "" {
		if cur := status.Get(node.Status.Conditions, valkeyv1.ConditionVolumeSized); cur == nil || cur.Reason != valkeyv1.ReasonExpansionNotSupported {
			r.Recorder.Eventf(node, claim, corev1.EventTypeWarning, valkeyv1.EventExpansionNotSupported, "ExpandClaim", "%s", refused)
		}
		return &sized{false, valkeyv1.ReasonExpansionNotSupported, refused}, nil
	}
	if claim.Status.Phase != corev1.ClaimBound {
		// The API server only lets a bound claim grow; the claim's bind event brings the
		// node back.
		return nil, nil
	}
	from := claim.Spec.Resources.Requests[corev1.ResourceStorage]
	if err := expand(ctx, r.Client, claim, desired); err != nil {
		if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
			// Retrying at once gets the same answer; the node comes back on a change of
			// its own, its claim or its class, and after RetryRefusedExpansion for what
			// is not watched (a raised quota, the API server's admission catching up).
			return &sized{false, valkeyv1.ReasonResizeFailed, fmt.Sprintf("the API server refused to expand claim %s: %v", claim.Name, err)}, nil
		}
		return nil, err
	}
	resizesStarted.Inc()
	r.Recorder.Eventf(node, claim, corev1.EventTypeNormal, valkeyv1.EventResizeStarted, "ExpandClaim",
		"expanding claim %s from %s to %s", claim.Name, from.String(), desired.String())
	return nil, nil
}

// recordSizeTransition counts and records the end of a resize (VolumeSized became True
// after a resize reason) and its failure.
func (r *Reconciler) recordSizeTransition(node *valkeyv1.ValkeyNode, claim *corev1.PersistentVolumeClaim, now metav1.Condition) {
	cur := status.Get(node.Status.Conditions, valkeyv1.ConditionVolumeSized)
	if cur == nil || cur.Reason == now.Reason {
		return
	}
	switch {
	case now.Reason == valkeyv1.ReasonResizeFailed:
		resizesFailed.Inc()
		r.Recorder.Eventf(node, claim, corev1.EventTypeWarning, valkeyv1.EventResizeFailed, "ExpandClaim", "%s", now.Message)
	case now.Reason == valkeyv1.ReasonAutoGrown && cur.Reason != valkeyv1.ReasonAutoGrown:
		resizesFinished.Inc()
		capacity := claim.Status.Capacity[corev1.ResourceStorage]
		r.Recorder.Eventf(node, claim, corev1.EventTypeNormal, valkeyv1.EventAutoGrown, "AutoGrow",
			"claim %s now has %s, its file system grown online (persistence.autoGrow; persistence.size %s stays the floor)",
			claim.Name, capacity.String(), node.Spec.Persistence.Size.String())
	case (now.Reason == valkeyv1.ReasonSized || now.Reason == valkeyv1.ReasonLargerThanRequested) &&
		(cur.Reason == valkeyv1.ReasonResizing || cur.Reason == valkeyv1.ReasonFileSystemResizePending || cur.Reason == valkeyv1.ReasonResizeFailed):
		resizesFinished.Inc()
		capacity := claim.Status.Capacity[corev1.ResourceStorage]
		r.Recorder.Eventf(node, claim, corev1.EventTypeNormal, valkeyv1.EventResizeFinished, "ExpandClaim",
			"claim %s now has %s", claim.Name, capacity.String())
	}
}
