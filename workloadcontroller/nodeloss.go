package workloadcontroller

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// IndexPodNodeName indexes the cached pods by spec.nodeName, to find the pods of a
// Kubernetes node whose readiness changed.
const IndexPodNodeName = "spec.nodeName"

// nodeLoss is why the pod's Kubernetes node counts as lost ("" when it does not): it is
// NotReady or Unknown, or gone. With persistence, the message adds what to do when the
// node's claim is on a volume only that node can mount.
func (r *Reconciler) nodeLoss(ctx context.Context, node *valkeyv1.ValkeyNode, pod *corev1.Pod) (string, error) {
	if pod == nil || pod.Spec.NodeName == "" || r.Options.IgnoreNodes {
		return "", nil
	}
	where := "is on"
	if !pod.DeletionTimestamp.IsZero() {
		where = "is being deleted on"
	}
	host := pod.Spec.NodeName
	var state string
	k8sNode := &corev1.Node{}
	switch err := r.Get(ctx, types.NamespacedName{Name: pod.Spec.NodeName}, k8sNode); {
	case apierrors.IsNotFound(err):
		state = "which no longer exists"
	case err != nil:
		return "", fmt.Errorf("get Kubernetes node %s of pod %s: %w", pod.Spec.NodeName, pod.Name, err)
	default:
		if state = notReadyState(k8sNode); state == "" {
			return "", nil
		}
		if h := k8sNode.Labels[corev1.LabelHostname]; h != "" {
			host = h
		}
	}
	msg := fmt.Sprintf("pod %s %s Kubernetes node %s, %s", pod.Name, where, pod.Spec.NodeName, state)
	if node.Spec.Persistence == nil {
		return msg, nil
	}
	pv, err := r.localVolume(ctx, node, host)
	if err != nil || pv == "" {
		return msg, err
	}
	claim := valkeyv1.ClaimName(node.Name)
	return msg + fmt.Sprintf("; claim %s is on volume %s, which only %s can mount: if %s does not return, "+
		"delete the claim and the pod (kubectl -n %s delete pvc %s --wait=false; kubectl -n %s delete pod %s --force --grace-period=0): "+
		"a new empty claim is made and the node rejoins as a replica (docs/contract.md, \"A Kubernetes node is lost\")",
		claim, pv, pod.Spec.NodeName, pod.Spec.NodeName, node.Namespace, claim, node.Namespace, pod.Name), nil
}

// notReadyState describes a Kubernetes node whose Ready condition is not True ("" when it
// is Ready, or has not reported yet).
func notReadyState(n *corev1.Node) string {
	for _, c := range n.Status.Conditions {
		if c.Type != corev1.NodeReady {
			continue
		}
		if c.Status == corev1.ConditionTrue {
			return ""
		}
		state := "NotReady"
		if c.Status == corev1.ConditionUnknown {
			state = "Unknown"
		}
		return fmt.Sprintf("which is %s since %s (%s: %s)", state,
			c.LastTransitionTime.UTC().Format(time.RFC3339), c.Reason, c.Message)
	}
	return ""
}

// localVolume is the name of the volume bound to the node's claim when its node affinity
// pins it to the host (a local volume), "" otherwise. PersistentVolumes are read from the
// API server, not a cache: this runs only for a lost node.
func (r *Reconciler) localVolume(ctx context.Context, node *valkeyv1.ValkeyNode, host string) (string, error) {
	pvs := &corev1.PersistentVolumeList{}
	if err := r.APIReader.List(ctx, pvs); err != nil {
		return "", fmt.Errorf("list PersistentVolumes for claim %s: %w", valkeyv1.ClaimName(node.Name), err)
	}
	for i := range pvs.Items {
		pv := &pvs.Items[i]
		ref := pv.Spec.ClaimRef
		if ref != nil && ref.Namespace == node.Namespace && ref.Name == valkeyv1.ClaimName(node.Name) && pinnedTo(pv, host) {
			return pv.Name, nil
		}
	}
	return "", nil
}

// pinnedTo is true when every term of the volume's required node affinity allows only the
// given hostname.
func pinnedTo(pv *corev1.PersistentVolume, host string) bool {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil || len(pv.Spec.NodeAffinity.Required.NodeSelectorTerms) == 0 {
		return false
	}
	for _, term := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
		if !slices.ContainsFunc(term.MatchExpressions, func(e corev1.NodeSelectorRequirement) bool {
			return e.Key == corev1.LabelHostname && e.Operator == corev1.NodeSelectorOpIn &&
				len(e.Values) == 1 && e.Values[0] == host
		}) {
			return false
		}
	}
	return true
}

// nodeToNodes maps a Kubernetes node to the ValkeyNodes of the pods it runs.
func nodeToNodes(c client.Reader) func(context.Context, client.Object) []reconcile.Request {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		pods := &corev1.PodList{}
		if err := c.List(ctx, pods, client.MatchingFields{IndexPodNodeName: o.GetName()}); err != nil {
			return nil
		}
		var reqs []reconcile.Request
		for i := range pods.Items {
			reqs = append(reqs, podToNode(ctx, &pods.Items[i])...)
		}
		return reqs
	}
}
