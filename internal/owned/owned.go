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
