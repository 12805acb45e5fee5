package workloadcontroller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// reconcileRoll compares the desired template with the applied one and rolls by handshake:
// a node of a cluster gets RollPending=True (TemplateChanged) and its workload is left alone
// until RollApproved=True for the current generation; then the template is applied
// (Rolling) and RollPending clears once the new pod is Ready. A node outside any cluster
// rolls at once. With persistence, nothing is re-templated before VolumeReady=True for the
// current generation. It returns the RollPending condition.
func (r *Reconciler) reconcileRoll(ctx context.Context, node *valkeyv1.ValkeyNode, cur *current, want *desired, volumeOK bool) (metav1.Condition, error) {
	kind := cur.existingKind()
	applied := cur.appliedHash(kind)
	prev := status.Get(node.Status.Conditions, valkeyv1.ConditionRollPending)
	wasPending := prev != nil && prev.Status == metav1.ConditionTrue

	if kind == want.kind && applied == want.hash {
		if err := r.repair(ctx, node, cur, want); err != nil {
			return status.Condition(valkeyv1.ConditionRollPending, false, valkeyv1.ReasonUpToDate, err.Error()), err
		}
		wl := cur.workload(kind)
		if from := wl.GetAnnotations()[AnnotationRollFrom]; from != "" {
			if !podRuns(cur.pod, want.hash) {
				return status.Condition(valkeyv1.ConditionRollPending, true, valkeyv1.ReasonRolling,
					fmt.Sprintf("template %s applied (replacing %s); waiting for a Ready pod that runs it", want.hash, from)), nil
			}
			patch := client.MergeFrom(wl.DeepCopyObject().(client.Object))
			ann := wl.GetAnnotations()
			delete(ann, AnnotationRollFrom)
			wl.SetAnnotations(ann)
			if err := r.Patch(ctx, wl, patch); err != nil {
				err = fmt.Errorf("mark the roll of %s %s done: %w", kind, wl.GetName(), err)
				return status.Condition(valkeyv1.ConditionRollPending, true, valkeyv1.ReasonRolling, err.Error()), err
			}
			r.Recorder.Eventf(node, nil, corev1.EventTypeNormal, valkeyv1.EventRollCompleted, "Roll",
				"pod %s runs template %s and is Ready", cur.pod.Name, want.hash)
		}
		return status.Condition(valkeyv1.ConditionRollPending, false, valkeyv1.ReasonUpToDate,
			fmt.Sprintf("%s %s runs the desired template %s", kind, valkeyv1.WorkloadName(node.Name), want.hash)), nil
	}

	if !volumeOK {
		return status.Condition(valkeyv1.ConditionRollPending, false, valkeyv1.ReasonWaitingForVolume,
			fmt.Sprintf("desired template %s differs from the applied %s; the roll is requested once VolumeReady=True at generation %d",
				want.hash, applied, node.Generation)), nil
	}

	approval := status.Get(node.Status.Conditions, valkeyv1.ConditionRollApproved)
	approved := status.IsCurrentTrue(node, node.Status.Conditions, valkeyv1.ConditionRollApproved)
	if node.Spec.ClusterName != "" && !approved {
		if !wasPending || prev.Reason != valkeyv1.ReasonTemplateChanged || node.Status.Workload == nil ||
			node.Status.Workload.DesiredTemplateHash != want.hash {
			r.Recorder.Eventf(node, nil, corev1.EventTypeNormal, valkeyv1.EventRollRequested, "Roll",
				"desired template %s differs from the applied %s; waiting for RollApproved", want.hash, applied)
		}
		return status.Condition(valkeyv1.ConditionRollPending, true, valkeyv1.ReasonTemplateChanged,
			fmt.Sprintf("desired template %s differs from the applied %s; waiting for RollApproved=True at generation %d",
				want.hash, applied, node.Generation)), nil
	}

	from := applied
	if from == "" {
		from = "unknown"
	}
	if err := r.applyDesired(ctx, node, cur, want, from); err != nil {
		return status.Condition(valkeyv1.ConditionRollPending, true, valkeyv1.ReasonTemplateChanged,
			fmt.Sprintf("applying template %s: %v", want.hash, err)), err
	}
	why := "the node is outside any cluster"
	if node.Spec.ClusterName != "" {
		why = fmt.Sprintf("approved (%s)", approval.Reason)
	}
	r.Recorder.Eventf(node, nil, corev1.EventTypeNormal, valkeyv1.EventRollApplied, "Roll",
		"applied template %s to %s %s: %s", want.hash, want.kind, valkeyv1.WorkloadName(node.Name), why)
	return status.Condition(valkeyv1.ConditionRollPending, true, valkeyv1.ReasonRolling,
		fmt.Sprintf("template %s applied (%s); waiting for a Ready pod that runs it", want.hash, why)), nil
}

// repair restores what may drift without changing the applied template: the ConfigMap
// (its content is the applied config, since applied == desired), one replica, and no
// leftover workload of the other kind.
func (r *Reconciler) repair(ctx context.Context, node *valkeyv1.ValkeyNode, cur *current, want *desired) error {
	if err := r.ensureConfigMap(ctx, node, cur, want.config); err != nil {
		return err
	}
	switch {
	case want.kind == valkeyv1.WorkloadDeployment && cur.sts != nil:
		if err := r.deleteObject(ctx, cur.sts); err != nil {
			return err
		}
	case want.kind != valkeyv1.WorkloadDeployment && cur.deploy != nil:
		if err := r.deleteObject(ctx, cur.deploy); err != nil {
			return err
		}
	}
	if cur.sts != nil && want.kind != valkeyv1.WorkloadDeployment && ptr.Deref(cur.sts.Spec.Replicas, 1) != 1 {
		upd := cur.sts.DeepCopy()
		upd.Spec.Replicas = ptr.To[int32](1)
		if err := r.Update(ctx, upd); err != nil {
			return fmt.Errorf("scale StatefulSet %s back to 1: %w", upd.Name, err)
		}
	}
	if cur.deploy != nil && want.kind == valkeyv1.WorkloadDeployment && ptr.Deref(cur.deploy.Spec.Replicas, 1) != 1 {
		upd := cur.deploy.DeepCopy()
		upd.Spec.Replicas = ptr.To[int32](1)
		if err := r.Update(ctx, upd); err != nil {
			return fmt.Errorf("scale Deployment %s back to 1: %w", upd.Name, err)
		}
	}
	return nil
}

// podRuns tells whether pod runs the template with the given hash and is Ready.
func podRuns(pod *corev1.Pod, hash string) bool {
	return pod != nil && pod.DeletionTimestamp.IsZero() && pod.Annotations[AnnotationTemplateHash] == hash && podReady(pod)
}
