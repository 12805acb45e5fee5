package topologycontroller

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// nodeReconciler writes the topology conditions of the ValkeyNodes the cluster reconciler
// does not handle: nodes outside any cluster (NotInCluster) and nodes whose ValkeyCluster
// is gone or being deleted (Drained=True ClusterDeleting: there is nothing to drain to).
type nodeReconciler struct {
	Client client.Client
	status status.Applier
}

func (r *nodeReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var n valkeyv1.ValkeyNode
	if err := r.Client.Get(ctx, req.NamespacedName, &n); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	var conds []metav1.Condition
	switch {
	case n.Spec.ClusterName == "":
		conds = append(conds, status.Condition(valkeyv1.ConditionClusterJoined, false, valkeyv1.ReasonNotInCluster, "the node belongs to no ValkeyCluster and runs alone"))
		if !n.DeletionTimestamp.IsZero() {
			conds = append(conds, status.Condition(valkeyv1.ConditionDrained, true, valkeyv1.ReasonNotInCluster, "the node belongs to no cluster: nothing to drain"))
		}
	default:
		var vc valkeyv1.ValkeyCluster
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: n.Namespace, Name: n.Spec.ClusterName}, &vc)
		if err != nil && !isNotFound(err) {
			return ctrl.Result{}, err
		}
		if err == nil && vc.DeletionTimestamp.IsZero() {
			return ctrl.Result{}, nil // the cluster reconciler owns this node's status
		}
		if n.DeletionTimestamp.IsZero() {
			return ctrl.Result{}, nil // garbage collection deletes it with its cluster
		}
		joined := status.Get(n.Status.Conditions, valkeyv1.ConditionClusterJoined)
		if joined != nil {
			conds = append(conds, *joined)
		}
		conds = append(conds, status.Condition(valkeyv1.ConditionDrained, true, valkeyv1.ReasonClusterDeleting, "the ValkeyCluster is gone or being deleted: nothing to drain to"))
	}
	if sameConditions(n.Status.Conditions, conds) && sameGeneration(&n, conds) {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, r.status.Apply(ctx, &n, n.Status.Conditions, status.Status{Conditions: conds, Fields: map[string]any{"topology": n.Status.Topology}})
}

// nodesOfCluster maps a ValkeyCluster event to its nodes (its deletion opens their drain).
func (r *nodeReconciler) nodesOfCluster(ctx context.Context, o client.Object) []reconcile.Request {
	var list valkeyv1.ValkeyNodeList
	if err := r.Client.List(ctx, &list, client.InNamespace(o.GetNamespace()), client.MatchingLabels{valkeyv1.LabelCluster: o.GetName()}); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, n := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&n)})
	}
	return out
}
