package workloadcontroller

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// The node's pod is found by ownership, never by its labels: the labels only select what the
// cache holds, and anyone who may create pods in the namespace can put them on a pod. The
// pod taken for the node's gives status.workload.podIP, which the topology controller dials
// with the operator's credentials, the volume controller reads the disk usage from and the
// server certificate names.

// podMemo is what the controller knows of the pods that carry a node's labels, by UID: true
// for a pod of the node's workload, false for a foreign one already reported. A pod once
// the node's stays so until it is gone, though its workload may go first (the node deleted,
// its workload type changed) or leave it orphaned a moment (a StatefulSet made again, which
// adopts it): its UID and address are its own for its life.
type podMemo = map[types.UID]bool

// nodePods splits the pods that carry the node's labels into the node's own and the others,
// and sends a Warning event ForeignPod for each other one not reported yet.
func (r *Reconciler) nodePods(ctx context.Context, node *valkeyv1.ValkeyNode, cur *current, pods []corev1.Pod) ([]corev1.Pod, error) {
	key := types.NamespacedName{Namespace: node.Namespace, Name: node.Name}
	known, _ := r.pods.get(key)
	now := podMemo{}
	var ours []corev1.Pod
	for i := range pods {
		pod := &pods[i]
		mine := known[pod.UID]
		if !mine {
			var err error
			if mine, err = r.madeFor(ctx, node, cur, pod); err != nil {
				return nil, err
			}
		}
		if mine {
			ours = append(ours, *pod)
		} else if _, reported := known[pod.UID]; !reported {
			// The pod is the event's related object: events of one reason about one object
			// are otherwise a series, which keeps the first note only.
			r.Recorder.Eventf(node, pod, corev1.EventTypeWarning, valkeyv1.EventForeignPod, "Select",
				"pod %s carries the labels of ValkeyNode %s but its workload %s did not make it (%s): it is ignored, and its address is never used",
				pod.Name, node.Name, valkeyv1.WorkloadName(node.Name), controllerOf(pod))
		}
		now[pod.UID] = mine
	}
	if len(now) == 0 {
		r.pods.take(key)
	} else {
		r.pods.put(key, now)
	}
	return ours, nil
}

// madeFor tells whether pod was made by one of the node's workloads, one the node is the
// controller of: the pod's controller is, by UID, the node's StatefulSet, or a ReplicaSet
// whose controller is the node's Deployment.
func (r *Reconciler) madeFor(ctx context.Context, node *valkeyv1.ValkeyNode, cur *current, pod *corev1.Pod) (bool, error) {
	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.APIVersion != appsv1.SchemeGroupVersion.String() {
		return false, nil
	}
	for _, w := range cur.workloads {
		if w.controller != node.UID {
			continue
		}
		switch {
		case w.kind == valkeyv1.WorkloadStatefulSet && ref.Kind == "StatefulSet":
			if ref.UID == w.uid {
				return true, nil
			}
		case w.kind == valkeyv1.WorkloadDeployment && ref.Kind == "ReplicaSet":
			return r.replicaSetOf(ctx, pod.Namespace, ref, w.uid)
		}
	}
	return false, nil
}

// replicaSetOf tells whether the ReplicaSet ref names exists, with ref's UID, and is
// controlled by the Deployment of UID deployment. It is read past the cache, its metadata
// only (the controller caches no ReplicaSet): once for each pod of the node's Deployment,
// which is then known (podMemo), and at each look at a foreign pod that names one.
func (r *Reconciler) replicaSetOf(ctx context.Context, ns string, ref *metav1.OwnerReference, deployment types.UID) (bool, error) {
	rs := &metav1.PartialObjectMetadata{}
	rs.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.Name}, rs); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("get ReplicaSet %s: %w", ref.Name, err)
	}
	owner := metav1.GetControllerOf(rs)
	return rs.UID == ref.UID && owner != nil && owner.UID == deployment, nil
}

// controllerOf says what controls pod, for the ForeignPod event.
func controllerOf(pod *corev1.Pod) string {
	ref := metav1.GetControllerOf(pod)
	if ref == nil {
		return "it has no controller"
	}
	return fmt.Sprintf("its controller is %s %s of UID %s", ref.Kind, ref.Name, ref.UID)
}
