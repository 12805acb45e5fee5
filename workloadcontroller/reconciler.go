package workloadcontroller

import (
	"context"
	"errors"
	"fmt"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
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
	Recorder events.EventRecorder
	Status   status.Applier
	Options  Options
}

// current is what exists for a node now.
type current struct {
	sts    *appsv1.StatefulSet
	deploy *appsv1.Deployment
	cm     *corev1.ConfigMap
	pod    *corev1.Pod
}

// workload returns the node's workload of the given kind, nil when absent.
func (c *current) workload(kind valkeyv1.WorkloadType) client.Object {
	if kind == valkeyv1.WorkloadDeployment {
		if c.deploy != nil {
			return c.deploy
		}
		return nil
	}
	if c.sts != nil {
		return c.sts
	}
	return nil
}

// appliedHash is the template hash of the workload of the given kind, "" when absent.
func (c *current) appliedHash(kind valkeyv1.WorkloadType) string {
	switch {
	case kind == valkeyv1.WorkloadDeployment && c.deploy != nil:
		return c.deploy.Spec.Template.Annotations[AnnotationTemplateHash]
	case kind != valkeyv1.WorkloadDeployment && c.sts != nil:
		return c.sts.Spec.Template.Annotations[AnnotationTemplateHash]
	}
	return ""
}

// existingKind is the kind of the node's workload (StatefulSet first), "" when none exists.
func (c *current) existingKind() valkeyv1.WorkloadType {
	switch {
	case c.sts != nil:
		return valkeyv1.WorkloadStatefulSet
	case c.deploy != nil:
		return valkeyv1.WorkloadDeployment
	}
	return ""
}

// Reconcile brings a ValkeyNode's ConfigMap and workload to the desired state, within the
// gates of the contract, and applies WorkloadReady, RollPending and status.workload once.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	node := &valkeyv1.ValkeyNode{}
	if err := r.Get(ctx, req.NamespacedName, node); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
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
	return requeue.Settle(ctx, err)
}

// observe reads the node's workload, ConfigMap and pod from the cache.
func (r *Reconciler) observe(ctx context.Context, node *valkeyv1.ValkeyNode) (*current, error) {
	cur := &current{}
	key := client.ObjectKey{Namespace: node.Namespace, Name: valkeyv1.WorkloadName(node.Name)}
	sts := &appsv1.StatefulSet{}
	if err := r.Get(ctx, key, sts); err == nil {
		cur.sts = sts
	} else if !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("get StatefulSet %s: %w", key, err)
	}
	dep := &appsv1.Deployment{}
	if err := r.Get(ctx, key, dep); err == nil {
		cur.deploy = dep
	} else if !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("get Deployment %s: %w", key, err)
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
	cur.pod = pickPod(pods.Items)
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
	res := result{workload: observedWorkload(cur, cur.existingKind())}
	want, err := buildDesired(node, r.Options)
	if err != nil {
		ce := asConfigError(err)
		if ce == nil {
			return res, err
		}
		return r.invalidConfig(node, cur, ce), nil
	}
	res.workload.DesiredTemplateHash = want.hash

	volumeOK := node.Spec.Persistence == nil || status.IsCurrentTrue(node, node.Status.Conditions, valkeyv1.ConditionVolumeReady)
	if cur.existingKind() == "" {
		// Initial creation is not a roll.
		res.roll = status.Condition(valkeyv1.ConditionRollPending, false, valkeyv1.ReasonUpToDate, "no workload yet")
		if !volumeOK {
			res.ready = status.Condition(valkeyv1.ConditionWorkloadReady, false, valkeyv1.ReasonWaitingForVolume,
				fmt.Sprintf("waiting for VolumeReady=True at generation %d before creating the workload that mounts claim %s",
					node.Generation, valkeyv1.ClaimName(node.Name)))
			return res, nil
		}
		if err := r.applyDesired(ctx, node, cur, want, ""); err != nil {
			res.ready = status.Condition(valkeyv1.ConditionWorkloadReady, false, valkeyv1.ReasonCreating, err.Error())
			return res, err
		}
		r.Recorder.Eventf(node, nil, corev1.EventTypeNormal, valkeyv1.EventWorkloadCreated, "Create",
			"created %s %s with template %s", want.kind, valkeyv1.WorkloadName(node.Name), want.hash)
		res.workload = observedWorkload(cur, want.kind)
		res.workload.DesiredTemplateHash = want.hash
		res.ready = podReadiness(cur.pod, want.hash)
		return res, nil
	}

	roll, err := r.reconcileRoll(ctx, node, cur, want, volumeOK)
	res.roll = roll
	res.workload = observedWorkload(cur, cur.existingKind())
	res.workload.DesiredTemplateHash = want.hash
	res.ready = podReadiness(cur.pod, cur.appliedHash(cur.existingKind()))
	return res, err
}

// invalidConfig reports a refused config and leaves everything that runs untouched.
func (r *Reconciler) invalidConfig(node *valkeyv1.ValkeyNode, cur *current, ce *ConfigError) result {
	res := result{workload: observedWorkload(cur, cur.existingKind())}
	msg := ce.Error()
	if cur.existingKind() != "" {
		msg += "; the running workload is left unchanged"
	}
	if old := status.Get(node.Status.Conditions, valkeyv1.ConditionWorkloadReady); old == nil ||
		old.Reason != valkeyv1.ReasonInvalidConfig || old.Message != msg || old.ObservedGeneration != node.Generation {
		r.Recorder.Eventf(node, nil, corev1.EventTypeWarning, valkeyv1.EventInvalidConfig, "Validate", "%s", msg)
	}
	res.ready = status.Condition(valkeyv1.ConditionWorkloadReady, false, valkeyv1.ReasonInvalidConfig, msg)
	res.roll = status.Condition(valkeyv1.ConditionRollPending, false, valkeyv1.ReasonInvalidConfig,
		"no roll while spec.config is refused")
	return res
}

// applyDesired writes the ConfigMap and the workload of the desired kind, and deletes a
// workload of the other kind (after a workloadType change). rollFrom, when not empty, is
// the hash of the template being replaced: it is recorded on the workload
// (AnnotationRollFrom) until a Ready pod runs the new template. cur is updated in place.
func (r *Reconciler) applyDesired(ctx context.Context, node *valkeyv1.ValkeyNode, cur *current, want *desired, rollFrom string) error {
	if err := r.ensureConfigMap(ctx, node, cur, want.config); err != nil {
		return err
	}
	switch want.kind {
	case valkeyv1.WorkloadDeployment:
		obj := buildDeployment(node, want)
		if rollFrom != "" {
			obj.Annotations[AnnotationRollFrom] = rollFrom
		}
		if cur.deploy == nil {
			if err := r.Create(ctx, obj); err != nil {
				return fmt.Errorf("create Deployment %s: %w", obj.Name, err)
			}
		} else {
			upd := cur.deploy.DeepCopy()
			upd.Labels, upd.Annotations = obj.Labels, mergeAnnotations(upd.Annotations, obj.Annotations)
			upd.Spec.Replicas, upd.Spec.Template, upd.Spec.Strategy = obj.Spec.Replicas, obj.Spec.Template, obj.Spec.Strategy
			if err := r.Update(ctx, upd); err != nil {
				return fmt.Errorf("update Deployment %s: %w", obj.Name, err)
			}
			obj = upd
		}
		cur.deploy = obj
		if cur.sts != nil {
			if err := r.deleteObject(ctx, cur.sts); err != nil {
				return err
			}
			cur.sts = nil
		}
	default:
		obj := buildStatefulSet(node, want)
		if rollFrom != "" {
			obj.Annotations[AnnotationRollFrom] = rollFrom
		}
		if cur.sts == nil {
			if err := r.Create(ctx, obj); err != nil {
				return fmt.Errorf("create StatefulSet %s: %w", obj.Name, err)
			}
		} else {
			upd := cur.sts.DeepCopy()
			upd.Labels, upd.Annotations = obj.Labels, mergeAnnotations(upd.Annotations, obj.Annotations)
			upd.Spec.Replicas, upd.Spec.Template = obj.Spec.Replicas, obj.Spec.Template
			upd.Spec.UpdateStrategy = obj.Spec.UpdateStrategy
			if err := r.Update(ctx, upd); err != nil {
				return fmt.Errorf("update StatefulSet %s: %w", obj.Name, err)
			}
			obj = upd
		}
		cur.sts = obj
		if cur.deploy != nil {
			if err := r.deleteObject(ctx, cur.deploy); err != nil {
				return err
			}
			cur.deploy = nil
		}
	}
	return nil
}

// ensureConfigMap creates or updates the node's ConfigMap with conf.
func (r *Reconciler) ensureConfigMap(ctx context.Context, node *valkeyv1.ValkeyNode, cur *current, conf string) error {
	want := buildConfigMap(node, conf)
	if cur.cm == nil {
		if err := r.Create(ctx, want); err != nil {
			return fmt.Errorf("create ConfigMap %s: %w", want.Name, err)
		}
		cur.cm = want
		return nil
	}
	if cur.cm.Data[ConfigFile] == conf && len(cur.cm.Data) == 1 {
		return nil
	}
	upd := cur.cm.DeepCopy()
	upd.Labels, upd.Data, upd.BinaryData = want.Labels, want.Data, nil
	if err := r.Update(ctx, upd); err != nil {
		return fmt.Errorf("update ConfigMap %s: %w", want.Name, err)
	}
	cur.cm = upd
	return nil
}

// deleteObject deletes obj in the background (its pods go with it); gone is fine.
func (r *Reconciler) deleteObject(ctx context.Context, obj client.Object) error {
	if err := r.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete %T %s: %w", obj, obj.GetName(), err)
	}
	return nil
}

func mergeAnnotations(have, want map[string]string) map[string]string {
	out := make(map[string]string, len(have)+len(want))
	for k, v := range have {
		out[k] = v
	}
	for k, v := range want {
		out[k] = v
	}
	return out
}
