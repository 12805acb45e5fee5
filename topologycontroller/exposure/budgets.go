package exposure

import (
	"context"
	"fmt"
	"strconv"

	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/owned"
)

// applyDisruptionBudgets keeps one PodDisruptionBudget per shard, owned by the cluster: at most
// one of the shard's pods may be evicted at a time, so a drain never takes a primary and
// its replica together (the evicted primary hands over to its replica as it stops: see
// valkey-start). A shard removed by scale-in keeps its budget until none of its
// ValkeyNodes is left. Budgets already as desired are not written again. A budget of a
// shard's name that another object controls is left as it is and reported (ObjectNotOwned).
func (w *Writer) applyDisruptionBudgets(ctx context.Context, vc *valkeyv1.ValkeyCluster, nodes []*valkeyv1.ValkeyNode, round Round) error {
	var list policyv1.PodDisruptionBudgetList
	if err := w.Client.List(ctx, &list, client.InNamespace(vc.Namespace), client.MatchingLabels{valkeyv1.LabelCluster: vc.Name}); err != nil {
		return fmt.Errorf("list PodDisruptionBudgets of %s: %w", vc.Name, err)
	}
	have := map[string]*policyv1.PodDisruptionBudget{}
	for i := range list.Items {
		if metav1.IsControlledBy(&list.Items[i], vc) {
			have[list.Items[i].Name] = &list.Items[i]
		}
	}
	shards := map[int32]bool{}
	for s := int32(0); s < vc.Spec.Shards; s++ {
		shards[s] = true
	}
	for _, n := range nodes {
		shards[n.Spec.Shard] = true
	}
	for s := range shards {
		want := desiredBudget(vc, s)
		cur := have[want.Name]
		delete(have, want.Name)
		if cur != nil && equality.Semantic.DeepEqual(cur.Spec, want.Spec) && owned.HasLabels(cur.Labels, want.Labels) {
			continue
		}
		if cur == nil {
			why, err := w.foreign(ctx, vc, "PodDisruptionBudget", &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: want.Namespace, Name: want.Name}})
			if err != nil {
				return err
			}
			if why != "" {
				round.NotOwned(why)
				continue
			}
		}
		if err := w.applyOwned(ctx, want); err != nil {
			return fmt.Errorf("apply PodDisruptionBudget %s: %w", want.Name, err)
		}
	}
	for _, gone := range have {
		if err := w.Client.Delete(ctx, gone, client.Preconditions{UID: &gone.UID}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete PodDisruptionBudget %s: %w", gone.Name, err)
		}
	}
	return nil
}

// desiredBudget is the PodDisruptionBudget of a shard: maxUnavailable 1 over the pods with
// the cluster's and the shard's labels. A pod that is not Ready may always be evicted
// (AlwaysAllow): it serves nothing, and a budget that counted it would block drains.
func desiredBudget(vc *valkeyv1.ValkeyCluster, shard int32) *policyv1.PodDisruptionBudget {
	labels := owned.ClusterLabels(vc.Name)
	labels[valkeyv1.LabelShard] = strconv.Itoa(int(shard))
	pdb := &policyv1.PodDisruptionBudget{
		TypeMeta: metav1.TypeMeta{APIVersion: policyv1.SchemeGroupVersion.String(), Kind: "PodDisruptionBudget"},
		ObjectMeta: metav1.ObjectMeta{
			Name: valkeyv1.DisruptionBudgetName(vc.Name, shard), Namespace: vc.Namespace, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{clusterOwner(vc)},
		},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{
				valkeyv1.LabelCluster: vc.Name,
				valkeyv1.LabelShard:   strconv.Itoa(int(shard)),
			}},
			UnhealthyPodEvictionPolicy: ptr.To(policyv1.AlwaysAllow),
		},
	}
	return pdb
}
