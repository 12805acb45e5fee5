// Package requeue sorts the error a reconcile ends with: what needs the controller's error
// log and backoff, and what is the normal course of a shared API server.
package requeue

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// AfterConflict is how soon a reconcile that lost a write to another writer runs again.
const AfterConflict = 250 * time.Millisecond

// Settle is the result of a reconcile that ended with err. A conflict (another writer changed
// the object first) runs again shortly, logged only at debug level; a refusal to create in a
// namespace that is being deleted ends the reconcile (everything in it is going away); any
// other error is returned for the controller's log and backoff.
func Settle(ctx context.Context, err error) (ctrl.Result, error) {
	switch {
	case err == nil:
		return ctrl.Result{}, nil
	case apierrors.IsConflict(err):
		log.FromContext(ctx).V(1).Info("lost a write to another writer; looking again", "error", err.Error())
		return ctrl.Result{RequeueAfter: AfterConflict}, nil
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		log.FromContext(ctx).V(1).Info("namespace is being deleted; nothing more to make in it", "error", err.Error())
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, err
}
