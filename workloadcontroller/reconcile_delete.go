package workloadcontroller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// reconcileDelete handles a ValkeyNode being deleted (held by the volume controller's
// finalizer). Until the topology controller reports Drained=True for the current generation
// (or the node carries valkey.io/skip-drain), the pod keeps serving so that its slots can
// move away, and WorkloadReady keeps following it. Then the workload and ConfigMap are
// deleted and WorkloadReady is False, Terminating; status.workload.podName is cleared once
// the pod is gone. Nothing is created or rolled while the node is being deleted.
func (r *Reconciler) reconcileDelete(ctx context.Context, node *valkeyv1.ValkeyNode, cur *current) (result, error) {
	res := result{workload: observedWorkload(cur)}
	if node.Status.Workload != nil {
		res.workload.DesiredTemplateHash = node.Status.Workload.DesiredTemplateHash
	}
	res.roll = status.Condition(valkeyv1.ConditionRollPending, false, valkeyv1.ReasonTerminating,
		"the node is being deleted: no roll")

	drained := status.IsCurrentTrue(node, node.Status.Conditions, valkeyv1.ConditionDrained)
	_, skip := node.Annotations[valkeyv1.AnnotationSkipDrain]
	if !drained && !skip {
		if cur.workload() == nil {
			res.ready = status.Condition(valkeyv1.ConditionWorkloadReady, false, valkeyv1.ReasonTerminating,
				"the node is being deleted and has no workload")
			return res, nil
		}
		res.ready = podReadiness(cur.pod, cur.appliedHash())
		res.ready.Message = fmt.Sprintf("%s (the node is being deleted; the workload stays until Drained=True at generation %d)",
			res.ready.Message, node.Generation)
		return res, nil
	}
	if err := r.deleteWorkload(ctx, node, cur, skip && !drained); err != nil {
		return r.terminating(res, cur, err.Error()), err
	}
	msg := "workload deleted"
	if cur.pod != nil {
		msg = fmt.Sprintf("workload deleted; waiting for pod %s to go", cur.pod.Name)
	}
	return r.terminating(res, cur, msg), nil
}

// deleteWorkload deletes the node's workloads and ConfigMap, with a Warning event first when
// skipped is set (the node was not drained).
func (r *Reconciler) deleteWorkload(ctx context.Context, node *valkeyv1.ValkeyNode, cur *current, skipped bool) error {
	wl := cur.workload()
	if wl == nil && cur.cm == nil {
		return nil
	}
	if skipped {
		r.Recorder.Eventf(node, nil, corev1.EventTypeWarning, valkeyv1.EventDrainSkipped, "Delete",
			"%s is set: deleting the workload without waiting for Drained=True; slots the node still owns become unavailable",
			valkeyv1.AnnotationSkipDrain)
	}
	for kind := range cur.workloads {
		if err := r.deleteObject(ctx, workloadObject(node, kind)); err != nil {
			return err
		}
	}
	if cur.cm != nil {
		if err := r.deleteObject(ctx, cur.cm); err != nil {
			return err
		}
	}
	if wl != nil {
		r.Recorder.Eventf(node, nil, corev1.EventTypeNormal, valkeyv1.EventWorkloadDeleted, "Delete",
			"deleted %s %s and ConfigMap %s", wl.kind, wl.name, valkeyv1.ConfigMapName(node.Name))
	}
	return nil
}

// terminating reports WorkloadReady=False, Terminating; only the pod, while it exists, stays
// in status.workload.
func (r *Reconciler) terminating(res result, cur *current, msg string) result {
	res.ready = status.Condition(valkeyv1.ConditionWorkloadReady, false, valkeyv1.ReasonTerminating, msg)
	res.workload.Kind, res.workload.Name, res.workload.PodIP = "", "", ""
	if cur.pod == nil {
		res.workload.PodName, res.workload.TemplateHash = "", ""
	}
	return res
}
