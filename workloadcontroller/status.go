package workloadcontroller

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// result is everything the controller owns on a ValkeyNode's status.
type result struct {
	ready    metav1.Condition
	roll     metav1.Condition
	workload valkeyv1.WorkloadStatus
	// after, when set with no status observed, is when to look again (see volumeUnreported).
	after time.Duration
}

// applyStatus applies WorkloadReady, RollPending and status.workload in one server-side apply.
func (r *Reconciler) applyStatus(ctx context.Context, node *valkeyv1.ValkeyNode, res result) error {
	if res.ready.Type == "" || res.roll.Type == "" {
		return nil // nothing observed (an early error): keep what was written last
	}
	var wl *valkeyv1.WorkloadStatus
	if res.workload != (valkeyv1.WorkloadStatus{}) {
		wl = &res.workload
	}
	return r.Status.ApplyNode(ctx, node, status.WorkloadShare{
		Conditions: []metav1.Condition{res.ready, res.roll},
		Workload:   wl,
	})
}

// observedWorkload is status.workload for the node's workload and pod.
func observedWorkload(cur *current) valkeyv1.WorkloadStatus {
	var ws valkeyv1.WorkloadStatus
	if w := cur.workload(); w != nil {
		ws.Kind, ws.Name = string(w.kind), w.name
	}
	if p := cur.pod; p != nil {
		ws.PodName = p.Name
		ws.TemplateHash = p.Annotations[AnnotationTemplateHash]
		if p.DeletionTimestamp.IsZero() {
			ws.PodIP = p.Status.PodIP
		}
	}
	return ws
}

// podReadiness is WorkloadReady from the pod's status as the kubelet reports it. applied is
// the hash of the workload's current template.
func podReadiness(pod *corev1.Pod, applied string) metav1.Condition {
	no := func(reason, format string, args ...any) metav1.Condition {
		return status.Condition(valkeyv1.ConditionWorkloadReady, false, reason, fmt.Sprintf(format, args...))
	}
	switch {
	case pod == nil:
		return no(valkeyv1.ReasonCreating, "waiting for the workload to create the pod")
	case !pod.DeletionTimestamp.IsZero():
		return no(valkeyv1.ReasonPodPending, "pod %s is terminating; waiting for its replacement", pod.Name)
	case applied != "" && pod.Annotations[AnnotationTemplateHash] != applied:
		return no(valkeyv1.ReasonRolling, "pod %s runs template %s, not the applied %s; waiting for its replacement",
			pod.Name, pod.Annotations[AnnotationTemplateHash], applied)
	case pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded:
		return no(valkeyv1.ReasonPodNotReady, "pod %s has ended (%s)%s", pod.Name, pod.Status.Phase, containerDetail(pod))
	case pod.Status.Phase != corev1.PodRunning || pod.Status.PodIP == "":
		return no(valkeyv1.ReasonPodPending, "pod %s is %s%s", pod.Name, phaseOr(pod), pendingDetail(pod))
	case !podReady(pod):
		return no(valkeyv1.ReasonPodNotReady, "pod %s is running but not Ready%s", pod.Name, containerDetail(pod))
	}
	return status.Condition(valkeyv1.ConditionWorkloadReady, true, valkeyv1.ReasonReady,
		fmt.Sprintf("pod %s (%s) is Ready", pod.Name, pod.Status.PodIP))
}

func phaseOr(pod *corev1.Pod) string {
	if pod.Status.Phase == "" {
		return "Pending"
	}
	return string(pod.Status.Phase)
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// pendingDetail says why a pod is pending: unscheduled, or its containers waiting.
func pendingDetail(pod *corev1.Pod) string {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return fmt.Sprintf(": not scheduled: %s %s", c.Reason, c.Message)
		}
	}
	return containerDetail(pod)
}

// containerDetail summarises waiting or terminated containers (ImagePullBackOff,
// CrashLoopBackOff, last exit...).
func containerDetail(pod *corev1.Pod) string {
	var parts []string
	for _, cs := range append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
		switch {
		case cs.State.Waiting != nil && cs.State.Waiting.Reason != "":
			parts = append(parts, fmt.Sprintf("%s: %s %s", cs.Name, cs.State.Waiting.Reason, cs.State.Waiting.Message))
		case cs.State.Terminated != nil:
			parts = append(parts, fmt.Sprintf("%s: terminated %s (exit %d)", cs.Name, cs.State.Terminated.Reason, cs.State.Terminated.ExitCode))
		case cs.State.Running != nil && !cs.Ready:
			parts = append(parts, fmt.Sprintf("%s: running, not ready (restarts %d)", cs.Name, cs.RestartCount))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return ": " + strings.TrimSpace(strings.Join(parts, "; "))
}
