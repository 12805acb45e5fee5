package topologycontroller

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// desiredNodeSpec is the spec of node (shard, replica) of vc: its place, and a copy of the
// cluster's server spec naming the password Secret in use.
func desiredNodeSpec(vc *valkeyv1.ValkeyCluster, shard, replica int32, ref *valkeyv1.SecretKeyRef) valkeyv1.ValkeyNodeSpec {
	server := *vc.Spec.ServerSpec.DeepCopy()
	server.PasswordSecret = ref.DeepCopy()
	return valkeyv1.ValkeyNodeSpec{ClusterName: vc.Name, Shard: shard, ReplicaIndex: replica, ServerSpec: server}
}

// wanted tells whether (shard, replica) is part of vc's spec.
func wanted(vc *valkeyv1.ValkeyCluster, shard, replica int32) bool {
	return shard < vc.Spec.Shards && replica <= vc.Spec.Replicas
}

// fanOut creates the missing ValkeyNodes of vc and brings the spec of the existing ones up
// to date. It returns every ValkeyNode of the cluster (wanted or not, deleting or not).
// Nodes that are no longer wanted are removed by scaleIn once drained. A node is the
// cluster's when its controller ownerReference has the cluster's UID: a node of the same
// name left by a deleted cluster of the same name is not, and its replacement is created
// once it is gone (waiting lists them meanwhile).
func (r *Reconciler) fanOut(ctx context.Context, vc *valkeyv1.ValkeyCluster, ref *valkeyv1.SecretKeyRef) (nodes []*valkeyv1.ValkeyNode, waiting []string, err error) {
	var list valkeyv1.ValkeyNodeList
	if err := r.List(ctx, &list, client.InNamespace(vc.Namespace), client.MatchingLabels{valkeyv1.LabelCluster: vc.Name}); err != nil {
		return nil, nil, fmt.Errorf("list ValkeyNodes of %s: %w", vc.Name, err)
	}
	existing := map[string]*valkeyv1.ValkeyNode{}
	foreign := map[string]*valkeyv1.ValkeyNode{}
	for i := range list.Items {
		n := &list.Items[i]
		if n.Spec.ClusterName != vc.Name || !metav1.IsControlledBy(n, vc) {
			foreign[n.Name] = n
			continue
		}
		existing[n.Name] = n
		nodes = append(nodes, n)
	}
	for shard := int32(0); shard < vc.Spec.Shards; shard++ {
		for replica := int32(0); replica <= vc.Spec.Replicas; replica++ {
			name := valkeyv1.NodeName(vc.Name, shard, replica)
			spec := desiredNodeSpec(vc, shard, replica, ref)
			n, ok := existing[name]
			if !ok && foreign[name] != nil {
				waiting = append(waiting, notOursYet(foreign[name]))
				continue
			}
			if !ok {
				n = &valkeyv1.ValkeyNode{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: vc.Namespace}, Spec: spec}
				n.Labels = valkeyv1.NodeLabels(n)
				if err := controllerutil.SetControllerReference(vc, n, r.Scheme()); err != nil {
					return nil, nil, err
				}
				if err := r.Create(ctx, n); err != nil {
					if isAlreadyExists(err) {
						continue // not ours or not in the cache yet: the next reconcile sees it
					}
					return nil, nil, fmt.Errorf("create ValkeyNode %s: %w", name, err)
				}
				nodes = append(nodes, n)
				continue
			}
			if !n.DeletionTimestamp.IsZero() {
				continue
			}
			labels := valkeyv1.NodeLabels(&valkeyv1.ValkeyNode{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec})
			if equality.Semantic.DeepEqual(n.Spec, spec) && hasLabels(n.Labels, labels) {
				continue
			}
			upd := n.DeepCopy()
			upd.Spec = spec
			if upd.Labels == nil {
				upd.Labels = map[string]string{}
			}
			for k, v := range labels {
				upd.Labels[k] = v
			}
			if err := r.Update(ctx, upd); err != nil {
				return nil, nil, fmt.Errorf("update ValkeyNode %s: %w", name, err)
			}
			*n = *upd
		}
	}
	sortNodes(nodes)
	return nodes, waiting, nil
}

// notOursYet says why a node of the cluster is not created yet: a ValkeyNode of that name
// belongs to something else, usually a deleted cluster of the same name whose nodes are
// still being drained and released.
func notOursYet(n *valkeyv1.ValkeyNode) string {
	owner := "no ValkeyCluster"
	if ref := metav1.GetControllerOf(n); ref != nil {
		owner = fmt.Sprintf("%s uid %s", ref.Kind, ref.UID)
	}
	state := "it is not being deleted: delete it, or the cluster waits"
	if !n.DeletionTimestamp.IsZero() {
		state = "it is being deleted"
	}
	return fmt.Sprintf("waiting for ValkeyNode %s of %s to go before creating this cluster's node of that name (%s)", n.Name, owner, state)
}

func hasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}
