package workloadcontroller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
	wl := cur.workload()
	if wl.kind == want.kind && wl.hash == want.hash {
		return r.keepUpToDate(ctx, node, cur, want)
	}
	if !volumeOK {
		return status.Condition(valkeyv1.ConditionRollPending, false, valkeyv1.ReasonWaitingForVolume,
			fmt.Sprintf("desired template %s differs from the applied %s; the roll is requested once VolumeReady=True at generation %d",
				want.hash, wl.hash, node.Generation)), nil
	}

	approval := status.Get(node.Status.Conditions, valkeyv1.ConditionRollApproved)
	approved := status.IsCurrentTrue(node, node.Status.Conditions, valkeyv1.ConditionRollApproved)
	if node.Spec.ClusterName != "" && !approved {
		return r.requestRoll(node, wl, want, ""), nil
	}

	from := wl.hash
	if from == "" {
		from = "unknown"
	}
	if err := r.apply(ctx, node, cur, want, from); err != nil {
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

// keepUpToDate handles a workload that already has the desired kind and template. It
// applies it again only to repair drift that leaves the template alone (the ConfigMap's
// content, which is the applied config since applied == desired; one replica; a leftover
// workload of the other kind), or to end a roll: once a Ready pod runs the new template,
// AnnotationRollFrom is removed (RollCompleted). It returns the RollPending condition.
func (r *Reconciler) keepUpToDate(ctx context.Context, node *valkeyv1.ValkeyNode, cur *current, want *desired) (metav1.Condition, error) {
	wl := cur.workload()
	rolling := wl.rollFrom != "" && !podRuns(cur.pod, want.hash)
	rollFrom := ""
	if rolling {
		rollFrom = wl.rollFrom
	}
	drifted := cur.cm == nil || !configCurrent(node, cur.cm, want.config) || wl.replicas != 1 || len(cur.workloads) > 1
	if drifted || rollFrom != wl.rollFrom {
		if err := r.apply(ctx, node, cur, want, rollFrom); err != nil {
			if wl.rollFrom != "" {
				return status.Condition(valkeyv1.ConditionRollPending, true, valkeyv1.ReasonRolling, err.Error()), err
			}
			return status.Condition(valkeyv1.ConditionRollPending, false, valkeyv1.ReasonUpToDate, err.Error()), err
		}
	}
	if rolling {
		return status.Condition(valkeyv1.ConditionRollPending, true, valkeyv1.ReasonRolling,
			fmt.Sprintf("template %s applied (replacing %s); waiting for a Ready pod that runs it", want.hash, wl.rollFrom)), nil
	}
	if wl.rollFrom != "" {
		r.Recorder.Eventf(node, nil, corev1.EventTypeNormal, valkeyv1.EventRollCompleted, "Roll",
			"pod %s runs template %s and is Ready", cur.pod.Name, want.hash)
	}
	return upToDate(wl, want.hash), nil
}

// configCurrent tells whether the ConfigMap cm needs no new content: it holds conf, or, for
// a cluster node whose live values the topology controller has not applied yet
// (ConfigApplied not True at this generation), conf apart from those values. The new live
// values are written to the ConfigMap only once the server took them, so that a restarted
// server never starts on a value its running twin refused.
func configCurrent(node *valkeyv1.ValkeyNode, cm *corev1.ConfigMap, conf string) bool {
	if configMatches(cm, conf) {
		return true
	}
	return appliesLive(node) && !status.IsCurrentTrue(node, node.Status.Conditions, valkeyv1.ConditionConfigApplied) &&
		restartConfigMatches(cm, conf)
}

// upToDate is RollPending=False for a workload that has the desired template.
func upToDate(wl *workload, hash string) metav1.Condition {
	return status.Condition(valkeyv1.ConditionRollPending, false, valkeyv1.ReasonUpToDate,
		fmt.Sprintf("%s %s runs the desired template %s", wl.kind, wl.name, hash))
}

// podRuns tells whether pod runs the template with the given hash and is Ready.
func podRuns(pod *corev1.Pod, hash string) bool {
	return pod != nil && pod.DeletionTimestamp.IsZero() && pod.Annotations[AnnotationTemplateHash] == hash && podReady(pod)
}

// requestRoll is RollPending=True, TemplateChanged: the desired template differs from the
// applied one and the roll waits for RollApproved (with a RollRequested event the first
// time). while, when not empty, says what else goes on meanwhile.
func (r *Reconciler) requestRoll(node *valkeyv1.ValkeyNode, wl *workload, want *desired, while string) metav1.Condition {
	prev := status.Get(node.Status.Conditions, valkeyv1.ConditionRollPending)
	if prev == nil || prev.Status != metav1.ConditionTrue || prev.Reason != valkeyv1.ReasonTemplateChanged ||
		node.Status.Workload == nil || node.Status.Workload.DesiredTemplateHash != want.hash {
		r.Recorder.Eventf(node, nil, corev1.EventTypeNormal, valkeyv1.EventRollRequested, "Roll",
			"desired template %s differs from the applied %s; waiting for RollApproved", want.hash, wl.hash)
	}
	return status.Condition(valkeyv1.ConditionRollPending, true, valkeyv1.ReasonTemplateChanged,
		fmt.Sprintf("desired template %s differs from the applied %s; waiting for RollApproved=True at generation %d%s",
			want.hash, wl.hash, node.Generation, while))
}
