package topologycontroller

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/owned"
	"valkey.io/operator/internal/status"
)

// foreign tells, past the cache (owned.Foreign), whether an object of obj's kind, namespace
// and name exists and is not controlled by the cluster. The message names the object and what
// to do; "" when the cluster may write it.
func (r *Reconciler) foreign(ctx context.Context, vc *valkeyv1.ValkeyCluster, kind string, obj client.Object) (string, error) {
	foreign, err := owned.Foreign(ctx, r.APIReader, vc, obj)
	if err != nil || !foreign {
		return "", err
	}
	return notOwnedObject(kind, obj.GetName(), vc.Name), nil
}

// notOwnedObject says that an object of one of the cluster's conventional names belongs to
// another, and what to do.
func notOwnedObject(kind, name, cluster string) string {
	return fmt.Sprintf("%s %s exists and is not owned by ValkeyCluster %s: it is left as it is; delete or rename it so that the operator can make its own", kind, name, cluster)
}

// progressingSays tells whether the cluster's Progressing condition already says why: its
// Warning event was sent then.
func progressingSays(st *clusterState, why string) bool {
	c := status.Get(st.cluster.Status.Conditions, valkeyv1.ConditionProgressing)
	return c != nil && c.Status == metav1.ConditionTrue && strings.Contains(c.Message, why)
}

// reportNotOwned records an object of the cluster's names that belongs to another, with a
// Warning event when Progressing did not name it already.
func (r *Reconciler) reportNotOwned(st *clusterState, why string) {
	st.notOwned = append(st.notOwned, why)
	if !progressingSays(st, why) {
		r.event(st, nil, corev1.EventTypeWarning, valkeyv1.EventObjectNotOwned, "ApplyObject", "%s", why)
	}
}
