package topologycontroller

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/requests"
	"valkey.io/operator/internal/requeue"
	"valkey.io/operator/internal/status"
)

// outsideReconciler writes the topology conditions of the ValkeyNodes the cluster
// reconciler does not handle: nodes outside any cluster (NotInCluster) and nodes whose
// ValkeyCluster is gone or being deleted (Drained=True ClusterDeleting: there is nothing to
// drain to), including nodes of a deleted cluster whose name a new cluster now has (the
// controller ownerReference's UID is not the new cluster's).
type outsideReconciler struct {
	client.Client
	Status status.Applier
}

func (r *outsideReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var n valkeyv1.ValkeyNode
	if err := r.Get(ctx, req.NamespacedName, &n); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if n.Spec.ClusterName == "" {
		return r.apply(ctx, &n, withNodePause(&n, aloneShare(&n)))
	}
	var vc valkeyv1.ValkeyCluster
	err := r.Get(ctx, client.ObjectKey{Namespace: n.Namespace, Name: n.Spec.ClusterName}, &vc)
	if err != nil && !isNotFound(err) {
		return ctrl.Result{}, err
	}
	if err == nil && vc.DeletionTimestamp.IsZero() && metav1.IsControlledBy(&n, &vc) {
		return ctrl.Result{}, nil // the cluster reconciler owns this node's status
	}
	if n.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // garbage collection deletes it with its cluster
	}
	res, err := r.apply(ctx, &n, withNodePause(&n, orphanShare(&n, orphanReason(&n, &vc, err == nil))))
	if err == nil && res.IsZero() {
		// Looked at again until it is gone: a cluster reconcile that began before the cluster
		// went may still apply the node's share without Drained (the same field manager), and
		// no event of the node's own would bring it back. An unchanged share is not written.
		res.RequeueAfter = orphanRecheck
	}
	return res, err
}

// orphanRecheck is how often a node being deleted without its cluster is looked at again.
const orphanRecheck = 5 * time.Second

// orphanReason says why a node being deleted has no cluster to drain into. A cluster is
// recognised by its UID: a ValkeyCluster re-created under the same name is another cluster,
// and the nodes of the deleted one are not its members.
func orphanReason(n *valkeyv1.ValkeyNode, vc *valkeyv1.ValkeyCluster, found bool) string {
	switch {
	case !found:
		return fmt.Sprintf("the ValkeyCluster %s is gone: nothing to drain to", n.Spec.ClusterName)
	case !vc.DeletionTimestamp.IsZero():
		return fmt.Sprintf("the ValkeyCluster %s is being deleted: nothing to drain to", n.Spec.ClusterName)
	}
	owner := "no ValkeyCluster"
	if ref := metav1.GetControllerOf(n); ref != nil {
		owner = fmt.Sprintf("ValkeyCluster uid %s", ref.UID)
	}
	return fmt.Sprintf("the node belongs to %s, which is gone; the ValkeyCluster %s now is another cluster (uid %s) and does not drain into it", owner, vc.Name, vc.UID)
}

// apply writes the node's topology status; a node gone meanwhile needs none.
func (r *outsideReconciler) apply(ctx context.Context, n *valkeyv1.ValkeyNode, share status.TopologyShare) (ctrl.Result, error) {
	if err := r.Status.ApplyNode(ctx, n, share); err != nil {
		return requeue.Settle(ctx, client.IgnoreNotFound(err))
	}
	return ctrl.Result{}, nil
}

// withNodePause adds Paused to the share of a node outside a live cluster that carries
// valkey.io/paused itself (the volume and workload controllers read the annotation).
func withNodePause(n *valkeyv1.ValkeyNode, share status.TopologyShare) status.TopologyShare {
	if !valkeyv1.Paused(n.Annotations) {
		return share
	}
	share.Conditions = append(share.Conditions, status.Condition(valkeyv1.ConditionPaused, true, valkeyv1.ReasonNodePaused, fmt.Sprintf(
		"paused by the annotation %s%s: the controllers change nothing of the node and its deletion waits; remove the annotation to resume",
		valkeyv1.AnnotationPaused, said(n.Annotations))))
	return share
}

// aloneShare is the status of a node outside any cluster.
func aloneShare(n *valkeyv1.ValkeyNode) status.TopologyShare {
	conds := []metav1.Condition{status.Condition(valkeyv1.ConditionClusterJoined, false, valkeyv1.ReasonNotInCluster, "the node belongs to no ValkeyCluster and runs alone")}
	if !n.DeletionTimestamp.IsZero() {
		conds = append(conds, status.Condition(valkeyv1.ConditionDrained, true, valkeyv1.ReasonNotInCluster, "the node belongs to no cluster: nothing to drain"))
	}
	return withSavedPoint(status.TopologyShare{Conditions: conds, Topology: n.Status.Topology}, nil)
}

// orphanShare is the status of a node being deleted whose cluster is gone or going.
func orphanShare(n *valkeyv1.ValkeyNode, why string) status.TopologyShare {
	var conds []metav1.Condition
	if joined := status.Get(n.Status.Conditions, valkeyv1.ConditionClusterJoined); joined != nil {
		conds = append(conds, *joined)
	}
	conds = append(conds, status.Condition(valkeyv1.ConditionDrained, true, valkeyv1.ReasonClusterDeleting, why))
	return withSavedPoint(status.TopologyShare{Conditions: conds, Topology: n.Status.Topology}, nil) // no backup saves a node outside a cluster
}

// nodesOfCluster maps a ValkeyCluster event to its nodes (its deletion opens their drain).
func (r *outsideReconciler) nodesOfCluster(ctx context.Context, o client.Object) []reconcile.Request {
	return requests.Of(ctx, r, &valkeyv1.ValkeyNodeList{}, nil, "the ValkeyNodes of ValkeyCluster "+client.ObjectKeyFromObject(o).String(),
		client.InNamespace(o.GetNamespace()), client.MatchingLabels{valkeyv1.LabelCluster: o.GetName()})
}
