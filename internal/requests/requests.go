// Package requests turns a list of objects into reconcile requests: what the mappers from
// one object to its children and the lists of a partition gained have in common.
package requests

import (
	"context"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Of lists objects into list (with opts) and returns a request for each one keep
// accepts (every one when keep is nil): what the mappers from a cluster to its children and
// the lists of a partition gained share. A list that fails is logged, as what, and maps to
// nothing (the next event or resync tries again).
func Of(ctx context.Context, c client.Reader, list client.ObjectList, keep func(client.Object) bool, what string, opts ...client.ListOption) []reconcile.Request {
	if err := c.List(ctx, list, opts...); err != nil {
		log.FromContext(ctx).Error(err, "list "+what)
		return nil
	}
	var out []reconcile.Request
	_ = apimeta.EachListItem(list, func(o runtime.Object) error {
		obj, ok := o.(client.Object)
		if ok && (keep == nil || keep(obj)) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
		}
		return nil
	})
	return out
}
