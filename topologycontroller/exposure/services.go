package exposure

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/owned"
)

// applyServices writes the cluster's client Service and headless Service (see
// desiredServices). One the API server refuses, or one of the same name that the cluster
// does not own, is reported through round and returned (Progressing=True, ServiceRefused, and a Warning event
// when new) and does not stop the round: the servers are run and repaired as before.
func (w *Writer) applyServices(ctx context.Context, vc *valkeyv1.ValkeyCluster, round Round) (string, error) {
	var refused []string
	for _, want := range desiredServices(vc, w.ClientPort) {
		why, err := w.service(ctx, vc, round, want)
		if err != nil {
			return "", err
		}
		if why != "" {
			refused = append(refused, why)
		}
	}
	if len(refused) == 0 {
		return "", nil
	}
	why := fmt.Sprint(refused)
	if len(refused) == 1 {
		why = refused[0]
	}
	round.Refused(valkeyv1.EventServiceRefused, "ApplyService", why)
	return why, nil
}

// service creates or updates one Service. It returns why the Service cannot be kept
// ("" when it is as wanted), or an error to retry.
func (w *Writer) service(ctx context.Context, vc *valkeyv1.ValkeyCluster, round Round, want *corev1.Service) (string, error) {
	var cur corev1.Service
	err := w.Client.Get(ctx, client.ObjectKeyFromObject(want), &cur)
	switch {
	case apierrors.IsNotFound(err):
		return w.createService(ctx, vc, round, want)
	case err != nil:
		return "", fmt.Errorf("get Service %s: %w", want.Name, err)
	case !metav1.IsControlledBy(&cur, vc):
		return notOwned(want.Name), nil
	case serviceUpToDate(&cur, want):
		return "", nil
	}
	err = w.applyOwned(ctx, want)
	if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
		return fmt.Sprintf("Service %s refused: %v; delete it so that it is made again", want.Name, err), nil
	}
	if err != nil {
		return "", fmt.Errorf("apply Service %s: %w", want.Name, err)
	}
	return "", nil
}

// createService creates a Service that the cache does not show. Creating (not applying)
// never takes over a Service of the same name that someone else made: the cache holds only
// the operator's own. When it exists, a direct read tells whether it is the cluster's (a
// cache that lags its creation) or another's.
func (w *Writer) createService(ctx context.Context, vc *valkeyv1.ValkeyCluster, round Round, want *corev1.Service) (string, error) {
	err := w.Client.Create(ctx, want.DeepCopy(), client.FieldOwner(valkeyv1.FieldManagerTopology))
	switch {
	case err == nil:
		round.Event(corev1.EventTypeNormal, valkeyv1.EventServiceCreated, "CreateService", "created Service "+want.Name)
		return "", nil
	case apierrors.IsAlreadyExists(err):
		var cur corev1.Service
		if err := w.APIReader.Get(ctx, client.ObjectKeyFromObject(want), &cur); err != nil {
			return "", fmt.Errorf("get Service %s: %w", want.Name, err)
		}
		if metav1.IsControlledBy(&cur, vc) {
			return "", nil
		}
		return notOwned(want.Name), nil
	case apierrors.IsInvalid(err) || apierrors.IsForbidden(err):
		return fmt.Sprintf("Service %s refused: %v", want.Name, err), nil
	case apierrors.IsInternalError(err):
		// Such as no ClusterIP left in the service range: the round goes on (the servers
		// reach each other by pod address), the condition says why, and the next round
		// tries again.
		return fmt.Sprintf("Service %s not created: %v; tried again at the next round", want.Name, err), nil
	}
	return "", fmt.Errorf("create Service %s: %w", want.Name, err)
}

// notOwned says that a Service of the cluster's conventional name belongs to another.
func notOwned(name string) string {
	return fmt.Sprintf("Service %s exists and is not owned by this cluster; delete or rename it so that the operator can make its own", name)
}

// serviceUpToDate: cur has every field of want the controller sets.
func serviceUpToDate(cur, want *corev1.Service) bool {
	return owned.HasLabels(cur.Labels, want.Labels) &&
		cur.Spec.Type == want.Spec.Type &&
		(want.Spec.ClusterIP == "" || cur.Spec.ClusterIP == want.Spec.ClusterIP) &&
		cur.Spec.PublishNotReadyAddresses == want.Spec.PublishNotReadyAddresses &&
		equality.Semantic.DeepEqual(cur.Spec.Selector, want.Spec.Selector) &&
		equality.Semantic.DeepEqual(cur.Spec.Ports, want.Spec.Ports)
}

// desiredServices are the cluster's client Service (ClusterIP, the Ready pods: the seed
// address of cluster-aware clients) and its headless Service (every pod, Ready or not, so
// that each has a DNS name valkey-<node>-0.<headless>.<namespace>.svc.<domain> from its start).
func desiredServices(vc *valkeyv1.ValkeyCluster, clientPort int) []*corev1.Service {
	selector := map[string]string{valkeyv1.LabelCluster: vc.Name, valkeyv1.LabelName: valkeyv1.NameValue}
	svc := func(name string, spec corev1.ServiceSpec) *corev1.Service {
		spec.Type = corev1.ServiceTypeClusterIP
		spec.Selector = selector
		return &corev1.Service{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
			ObjectMeta: metav1.ObjectMeta{
				Name: name, Namespace: vc.Namespace, Labels: owned.ClusterLabels(vc.Name),
				OwnerReferences: []metav1.OwnerReference{clusterOwner(vc)},
			},
			Spec: spec,
		}
	}
	return []*corev1.Service{
		svc(valkeyv1.ClientServiceName(vc.Name), corev1.ServiceSpec{Ports: servicePorts(vc, clientPort, false)}),
		svc(valkeyv1.HeadlessServiceName(vc.Name), corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone, PublishNotReadyAddresses: true, Ports: servicePorts(vc, clientPort, true),
		}),
	}
}

// servicePorts are the ports of the cluster's Services: the client port (named client; it
// speaks TLS when spec.tls is set), the plaintext port when tls.plaintextPort asks for one,
// and on the headless Service the cluster bus.
func servicePorts(vc *valkeyv1.ValkeyCluster, clientPort int, bus bool) []corev1.ServicePort {
	port := func(name string, p int) corev1.ServicePort {
		return corev1.ServicePort{Name: name, Protocol: corev1.ProtocolTCP, Port: int32(p), TargetPort: intstr.FromInt(p)} //nolint:gosec // G115: a port number
	}
	ports := []corev1.ServicePort{port("client", clientPort)}
	if tls := vc.Spec.TLS; tls != nil && tls.PlaintextPort != nil {
		ports = append(ports, port("plaintext", int(*tls.PlaintextPort)))
	}
	if bus {
		ports = append(ports, port("bus", clientPort+busPortOffset))
	}
	return ports
}

// ServiceChanged wakes the cluster when one of its Services is deleted or its spec or
// labels change (Services have no generation to compare), not on creation.
func ServiceChanged() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc: func(event.CreateEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*corev1.Service)
			n, ok2 := e.ObjectNew.(*corev1.Service)
			return !ok1 || !ok2 || !equality.Semantic.DeepEqual(o.Spec, n.Spec) || !equality.Semantic.DeepEqual(o.Labels, n.Labels)
		},
	}
}
