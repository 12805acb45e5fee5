package workloadcontroller

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/requeue"
	"valkey.io/operator/internal/status"
)

// Reconciler keeps each ValkeyNode's ConfigMap and StatefulSet (or Deployment) and reports
// them as WorkloadReady, RollPending and status.workload.
type Reconciler struct {
	client.Client
	// APIReader reads what is not cached: PersistentVolumes, only for a lost node, and the
	// objects of a node's names before it creates them (another's are never taken over).
	APIReader client.Reader
	Recorder  events.EventRecorder
	Status    status.Applier
	Options   Options
	// starts: the valkey-start image of each node's applied template (startimage.go).
	starts nodeMemo[startSeen]
	// replacing: each node's StatefulSet deleted to be made again (replace.go).
	replacing nodeMemo[*appsv1.StatefulSet]
	// pods: the pods with each node's labels, the node's own and the foreign (pods.go).
	pods nodeMemo[podMemo]
}

// current is what exists for a node now.
type current struct {
	// workloads holds the node's StatefulSet and Deployment by kind; both exist only while
	// the workload type changes.
	workloads map[valkeyv1.WorkloadType]*workload
	cm        *corev1.ConfigMap
	// pod is the node's pod: one its workload made (nodePods), never one found by its
	// labels alone.
	pod *corev1.Pod
}

// workload is what the controller reads of a StatefulSet or Deployment.
type workload struct {
	kind     valkeyv1.WorkloadType
	name     string
	uid      types.UID
	failure  string // a Deployment's ReplicaFailure condition
	hash     string // AnnotationTemplateHash of its pod template
	rollFrom string // AnnotationRollFrom
	replicas int32
	// serviceName of a StatefulSet (immutable: "" for one made before pods had DNS names).
	serviceName string
	deleting    bool // it has a deletionTimestamp
	// controller is the UID of its controller: the node's, unless someone else made it.
	controller types.UID
}

// workload returns the node's workload (the StatefulSet when both kinds exist), nil when
// there is none.
func (c *current) workload() *workload {
	if w := c.workloads[valkeyv1.WorkloadStatefulSet]; w != nil {
		return w
	}
	return c.workloads[valkeyv1.WorkloadDeployment]
}

// appliedHash is the template hash of the node's workload, "" when there is none.
func (c *current) appliedHash() string {
	if w := c.workload(); w != nil {
		return w.hash
	}
	return ""
}

// workloadObject is the node's workload of the given kind, with only its name set.
func workloadObject(node *valkeyv1.ValkeyNode, kind valkeyv1.WorkloadType) client.Object {
	meta := metav1.ObjectMeta{Namespace: node.Namespace, Name: valkeyv1.WorkloadName(node.Name)}
	if kind == valkeyv1.WorkloadDeployment {
		return &appsv1.Deployment{ObjectMeta: meta}
	}
	return &appsv1.StatefulSet{ObjectMeta: meta}
}

// readWorkload reads what the controller needs of a StatefulSet or Deployment.
func readWorkload(obj client.Object) *workload {
	w := &workload{name: obj.GetName(), uid: obj.GetUID(), rollFrom: obj.GetAnnotations()[AnnotationRollFrom],
		deleting: !obj.GetDeletionTimestamp().IsZero()}
	if ref := metav1.GetControllerOf(obj); ref != nil {
		w.controller = ref.UID
	}
	var tmpl corev1.PodTemplateSpec
	var replicas *int32
	switch o := obj.(type) {
	case *appsv1.StatefulSet:
		w.kind, tmpl, replicas = valkeyv1.WorkloadStatefulSet, o.Spec.Template, o.Spec.Replicas
		w.serviceName = o.Spec.ServiceName
	case *appsv1.Deployment:
		w.kind, tmpl, replicas = valkeyv1.WorkloadDeployment, o.Spec.Template, o.Spec.Replicas
		w.failure = deploymentFailure(o)
	}
	w.hash, w.replicas = tmpl.Annotations[AnnotationTemplateHash], ptr.Deref(replicas, 1)
	return w
}

// Reconcile brings a ValkeyNode's ConfigMap and workload to the desired state, within the
// gates of the contract, and applies WorkloadReady, RollPending and status.workload once.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	node := &valkeyv1.ValkeyNode{}
	if err := r.Get(ctx, req.NamespacedName, node); err != nil {
		if apierrors.IsNotFound(err) {
			r.starts.take(req.NamespacedName)
			r.replacing.take(req.NamespacedName)
			r.pods.take(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if valkeyv1.NodePaused(node) {
		return ctrl.Result{}, nil // its Paused condition says so; nothing is changed, nothing written
	}
	cur, err := r.observe(ctx, node)
	if err != nil {
		return ctrl.Result{}, err
	}
	var res result
	if node.DeletionTimestamp.IsZero() {
		res, err = r.reconcileNormal(ctx, node, cur)
	} else {
		res, err = r.reconcileDelete(ctx, node, cur)
	}
	if applyErr := r.applyStatus(ctx, node, res); applyErr != nil && !apierrors.IsNotFound(applyErr) {
		err = errors.Join(err, applyErr)
	}
	out, err := requeue.Settle(ctx, err)
	if err == nil && out.IsZero() && res.after > 0 {
		out.RequeueAfter = res.after
	}
	return out, err
}

// observe reads the node's workloads, ConfigMap and pod from the cache: the pod among those
// with the node's labels that its workload made (nodePods).
func (r *Reconciler) observe(ctx context.Context, node *valkeyv1.ValkeyNode) (*current, error) {
	cur := &current{workloads: map[valkeyv1.WorkloadType]*workload{}}
	for _, kind := range []valkeyv1.WorkloadType{valkeyv1.WorkloadStatefulSet, valkeyv1.WorkloadDeployment} {
		obj := workloadObject(node, kind)
		key := client.ObjectKeyFromObject(obj)
		if err := r.Get(ctx, key, obj); err == nil {
			cur.workloads[kind] = readWorkload(obj)
		} else if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("get %s %s: %w", kind, key, err)
		}
	}
	cmKey := client.ObjectKey{Namespace: node.Namespace, Name: valkeyv1.ConfigMapName(node.Name)}
	cm := &corev1.ConfigMap{}
	if err := r.Get(ctx, cmKey, cm); err == nil {
		cur.cm = cm
	} else if !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("get ConfigMap %s: %w", cmKey, err)
	}
	pods := &corev1.PodList{}
	if err := r.List(ctx, pods, client.InNamespace(node.Namespace), client.MatchingLabels(selectorLabels(node))); err != nil {
		return nil, fmt.Errorf("list pods of %s: %w", node.Name, err)
	}
	ours, err := r.nodePods(ctx, node, cur, pods.Items)
	if err != nil {
		return nil, fmt.Errorf("pods of %s: %w", node.Name, err)
	}
	cur.pod = pickPod(ours)
	return cur, nil
}

// pickPod returns the pod that stands for the node: the newest one not being deleted, else
// the newest one.
func pickPod(pods []corev1.Pod) *corev1.Pod {
	if len(pods) == 0 {
		return nil
	}
	sort.SliceStable(pods, func(i, j int) bool {
		ti, tj := pods[i].DeletionTimestamp.IsZero(), pods[j].DeletionTimestamp.IsZero()
		if ti != tj {
			return ti
		}
		return pods[j].CreationTimestamp.Before(&pods[i].CreationTimestamp)
	})
	return &pods[0]
}

// reconcileNormal creates the workload once its volume is ready, rolls it by handshake and
// reports its state.
func (r *Reconciler) reconcileNormal(ctx context.Context, node *valkeyv1.ValkeyNode, cur *current) (result, error) {
	want, err := desiredFor(node, cur, r.Options)
	if err != nil {
		if ce := asConfigError(err); ce != nil {
			return r.invalidConfig(ctx, node, cur, ce)
		}
		return result{workload: observedWorkload(cur)}, err
	}
	if want, err = r.keepStartImage(ctx, node, cur, want); err != nil {
		return result{workload: observedWorkload(cur)}, err
	}
	var res result
	volumeOK := node.Spec.Persistence == nil || status.IsCurrentTrue(node, node.Status.Conditions, valkeyv1.ConditionVolumeReady)
	if cur.workload() == nil && !volumeOK {
		if wait := volumeUnreported(node, r.Options.VolumeReportGrace, time.Now()); wait > 0 {
			return result{after: wait}, nil
		}
	}
	if cur.workload() == nil && volumeOK {
		why, err := r.foreign(ctx, node, cur, want)
		if err != nil {
			return result{workload: observedWorkload(cur)}, err
		}
		if why != "" {
			res = r.notOwned(node, why)
			res.workload = observedWorkload(cur)
			return res, nil
		}
	}
	policy, err := r.standalonePolicy(ctx, node)
	if err != nil {
		return result{workload: observedWorkload(cur)}, err
	}
	if w := cur.workload(); w != nil && (w.deleting || mustReplace(node, w, want)) {
		res, err = r.replace(ctx, node, cur, w, want)
	} else if cur.workload() == nil {
		res.ready, res.roll, err = r.create(ctx, node, cur, want, volumeOK)
	} else {
		res.roll, err = r.reconcileRoll(ctx, node, cur, want, volumeOK)
		res.ready = podReadiness(cur.pod, cur.appliedHash())
	}
	if err == nil {
		res.ready, err = r.explain(ctx, node, cur, res.ready)
	}
	if policy != "" {
		res.ready = r.policyNotKept(node, res.ready, policy)
		res.after = foreignRecheck
	}
	if apierrors.IsInvalid(err) {
		return r.refusedWorkload(ctx, node, cur, err)
	}
	res.workload = observedWorkload(cur)
	res.workload.DesiredTemplateHash = want.hash
	return res, err
}

// refusedWorkload reports a workload the API server refused as invalid (a field of the pod
// spec no admission rule of ours catches, such as a request above its limit): retrying
// cannot help until the spec changes, whose event brings the next reconcile.
func (r *Reconciler) refusedWorkload(ctx context.Context, node *valkeyv1.ValkeyNode, cur *current, err error) (result, error) {
	msg := "the API server refused the workload: " + truncate(err.Error(), maxFailureMessage) +
		"; correct that field of the ValkeyNode's spec (a cluster's node takes it from the ValkeyCluster)"
	return r.refused(ctx, node, cur, valkeyv1.ReasonWorkloadRefused, "Apply", msg)
}

// create makes the node's ConfigMap and workload once its volume is ready. It returns
// WorkloadReady and RollPending: initial creation is not a roll, and the workload created
// reports what the next reconcile finds (its own events bring no second status write). A
// StatefulSet deleted to be made again with its serviceName (replace) is made as it was.
func (r *Reconciler) create(ctx context.Context, node *valkeyv1.ValkeyNode, cur *current, want *desired, volumeOK bool) (ready, roll metav1.Condition, err error) {
	roll = status.Condition(valkeyv1.ConditionRollPending, false, valkeyv1.ReasonUpToDate, "no workload yet")
	if !volumeOK {
		return status.Condition(valkeyv1.ConditionWorkloadReady, false, valkeyv1.ReasonWaitingForVolume,
			fmt.Sprintf("waiting for VolumeReady=True at generation %d before creating the workload that mounts claim %s%s",
				node.Generation, valkeyv1.ClaimName(node.Name), volumeMissing(node))), roll, nil
	}
	if old, ok := r.replacing.take(types.NamespacedName{Namespace: node.Namespace, Name: node.Name}); ok {
		if err := r.remake(ctx, node, cur, old); err != nil {
			return status.Condition(valkeyv1.ConditionWorkloadReady, false, valkeyv1.ReasonCreating, err.Error()), roll, err
		}
		w := cur.workload()
		if w.hash != want.hash {
			return podReadiness(cur.pod, w.hash), r.requestRoll(node, w, want, ""), nil
		}
		return podReadiness(cur.pod, w.hash), upToDate(w, w.hash), nil
	}
	if err := r.apply(ctx, node, cur, want, ""); err != nil {
		return status.Condition(valkeyv1.ConditionWorkloadReady, false, valkeyv1.ReasonCreating, err.Error()), roll, err
	}
	// No event: status.workload and WorkloadReady say the same, and an event per node was a
	// fifth of a fan-out's writes.
	return podReadiness(cur.pod, want.hash), upToDate(cur.workload(), want.hash), nil
}

// invalidConfig reports a refused config and leaves everything that runs untouched.
func (r *Reconciler) invalidConfig(ctx context.Context, node *valkeyv1.ValkeyNode, cur *current, ce *ConfigError) (result, error) {
	return r.refused(ctx, node, cur, valkeyv1.ReasonInvalidConfig, "Validate", ce.Error())
}

// refused reports a spec the node cannot run as it is and leaves the running workload as it
// is: RollPending=False with the reason and why (nothing rolls), which is also the Warning
// event's, sent when RollPending changes. WorkloadReady says what runs: the pod of the
// running workload, which still serves with the spec it was made from (the topology
// controller goes on talking to it); without a workload, False with the reason.
func (r *Reconciler) refused(ctx context.Context, node *valkeyv1.ValkeyNode, cur *current, reason, action, msg string) (result, error) {
	res := result{workload: observedWorkload(cur)}
	running := cur.workload() != nil
	if running {
		msg += "; the running workload is left unchanged"
	}
	rollMsg := msg + "; nothing rolls until the spec is corrected"
	if old := status.Get(node.Status.Conditions, valkeyv1.ConditionRollPending); old == nil ||
		old.Reason != reason || old.Message != rollMsg || old.ObservedGeneration != node.Generation {
		r.Recorder.Eventf(node, nil, corev1.EventTypeWarning, reason, action, "%s", msg)
	}
	res.roll = status.Condition(valkeyv1.ConditionRollPending, false, reason, rollMsg)
	if !running {
		res.ready = status.Condition(valkeyv1.ConditionWorkloadReady, false, reason, msg)
		return res, nil
	}
	var err error
	res.ready, err = r.explain(ctx, node, cur, podReadiness(cur.pod, cur.appliedHash()))
	return res, err
}
