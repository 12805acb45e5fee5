package exposure

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/owned"
)

// Writer writes what guards and reaches a cluster's pods: its Services, its NetworkPolicy
// and a PodDisruptionBudget per shard.
type Writer struct {
	// Client reads through the cache (which holds only the operator's own objects) and
	// writes; APIReader reads past it, to tell another's object of a cluster's names.
	Client    client.Client
	APIReader client.Reader
	// ClientPort is the port every Valkey server listens on (the bus is 10000 above it).
	ClientPort int
	// OperatorNamespace is where the controllers run: the NetworkPolicy admits the topology
	// controller's pods from it (none when empty).
	OperatorNamespace string
}

// Round is what the writer needs of the reconcile it runs in: how to tell the user.
type Round interface {
	// Event records an event on the cluster.
	Event(eventType, reason, action, msg string)
	// Refused records a Warning event on the cluster unless its Progressing condition says
	// why already (an event was sent when it first did).
	Refused(reason, action, why string)
	// NotOwned reports an object of the cluster's names that belongs to another.
	NotOwned(why string)
}

// Outcome is what the round should report: why the NetworkPolicy or a Service is not as
// wanted ("" when it is).
type Outcome struct {
	PolicyRefused, ServiceRefused string
}

// Apply writes the cluster's PodDisruptionBudgets, NetworkPolicy and Services, in that
// order. What the API server refuses, or an object of the cluster's names that another
// controls, is reported through round and in the Outcome and does not stop the round; an
// error is one to retry.
func (w *Writer) Apply(ctx context.Context, vc *valkeyv1.ValkeyCluster, nodes []*valkeyv1.ValkeyNode, round Round) (Outcome, error) {
	var out Outcome
	if err := w.applyDisruptionBudgets(ctx, vc, nodes, round); err != nil {
		return out, err
	}
	why, err := w.applyNetworkPolicy(ctx, vc, round)
	if err != nil {
		return out, err
	}
	out.PolicyRefused = why
	out.ServiceRefused, err = w.applyServices(ctx, vc, round)
	return out, err
}

// applyOwned writes obj by server-side apply as the topology controller's field manager
// (owned.Apply).
func (w *Writer) applyOwned(ctx context.Context, obj client.Object) error {
	return owned.Apply(ctx, w.Client, obj, valkeyv1.FieldManagerTopology)
}

// foreign tells, past the cache (owned.Foreign), whether an object of obj's kind, namespace
// and name exists and is not controlled by the cluster. The message names the object and what
// to do; "" when the cluster may write it.
func (w *Writer) foreign(ctx context.Context, vc *valkeyv1.ValkeyCluster, kind string, obj client.Object) (string, error) {
	foreign, err := owned.Foreign(ctx, w.APIReader, vc, obj)
	if err != nil || !foreign {
		return "", err
	}
	return fmt.Sprintf("%s %s exists and is not owned by ValkeyCluster %s: it is left as it is; delete or rename it so that the operator can make its own", kind, obj.GetName(), vc.Name), nil
}

// clusterOwner makes the cluster the controller owner (garbage collection removes what it
// owns with it).
func clusterOwner(vc *valkeyv1.ValkeyCluster) metav1.OwnerReference {
	return *metav1.NewControllerRef(vc, valkeyv1.GroupVersion.WithKind("ValkeyCluster"))
}
