// Package owned tells whether an object of one of the operator's names may be written by the
// owner that wants it: the controllers' caches hold only objects with the operator's labels,
// so an unlabelled object of the same name looks missing there, and applying over it would
// take it over (its spec replaced, an ownerReference added: deleting the owner would delete
// it). Apply writes what its owner does own.
package owned

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// Foreign reads obj past the cache (an empty object of its kind, with its namespace and name;
// filled by the read) and tells whether it exists without owner as its controller. An
// object that does not exist, or that owner controls, is not foreign.
func Foreign(ctx context.Context, r client.Reader, owner metav1.Object, obj client.Object) (bool, error) {
	err := r.Get(ctx, client.ObjectKeyFromObject(obj), obj)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("get %T %s: %w", obj, obj.GetName(), err)
	}
	return !metav1.IsControlledBy(obj, owner), nil
}

// HasLabels tells whether have carries every label of want, with its value.
func HasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// ClusterLabels are the labels of what the topology controller makes for the cluster
// named cluster (Services, NetworkPolicy, budgets, Secrets).
func ClusterLabels(cluster string) map[string]string {
	return map[string]string{
		valkeyv1.LabelCluster:   cluster,
		valkeyv1.LabelManagedBy: valkeyv1.ManagedByValue,
		valkeyv1.LabelName:      valkeyv1.NameValue,
	}
}
