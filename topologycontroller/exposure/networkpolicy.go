package exposure

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/netpolicy"
	"valkey.io/operator/internal/owned"
)

// busPortOffset is the distance of Valkey's cluster bus port from its client port.
const busPortOffset = 10000

// applyNetworkPolicy writes the cluster's NetworkPolicy (see desiredNetworkPolicy), or deletes
// it when spec.network.policy is Disabled. One the API server refuses (a clientFrom peer
// it finds invalid) is reported through round and returned (Progressing=True, NetworkPolicyRefused, and a Warning
// event when new) and does not stop the round: the servers are run and repaired as before.
func (w *Writer) applyNetworkPolicy(ctx context.Context, vc *valkeyv1.ValkeyCluster, round Round) (string, error) {
	var cur networkingv1.NetworkPolicy
	err := w.Client.Get(ctx, client.ObjectKey{Namespace: vc.Namespace, Name: valkeyv1.NetworkPolicyName(vc.Name)}, &cur)
	if err != nil && !apierrors.IsNotFound(err) {
		return "", fmt.Errorf("get NetworkPolicy %s: %w", valkeyv1.NetworkPolicyName(vc.Name), err)
	}
	exists := err == nil && metav1.IsControlledBy(&cur, vc)
	if !vc.Spec.Network.PolicyEnabled() {
		if !exists {
			return "", nil
		}
		if err := w.Client.Delete(ctx, &cur, client.Preconditions{UID: &cur.UID}); err != nil && !apierrors.IsNotFound(err) {
			return "", fmt.Errorf("delete NetworkPolicy %s: %w", cur.Name, err)
		}
		return "", nil
	}
	want := desiredNetworkPolicy(vc, w.ClientPort, w.OperatorNamespace)
	if exists && equality.Semantic.DeepEqual(cur.Spec, want.Spec) && owned.HasLabels(cur.Labels, want.Labels) {
		return "", nil
	}
	if !exists {
		why, err := w.foreign(ctx, vc, "NetworkPolicy", &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: want.Namespace, Name: want.Name}})
		if err != nil {
			return "", err
		}
		if why != "" {
			return policyNotKept(round, why+" (or set spec.network.policy: Disabled and write your own)"), nil
		}
	}
	err = w.applyOwned(ctx, want)
	if apierrors.IsInvalid(err) {
		return policyNotKept(round, fmt.Sprintf("NetworkPolicy %s refused: %v; correct spec.network.clientFrom (or set spec.network.policy: Disabled and write your own)", want.Name, err)), nil
	}
	if err != nil {
		return "", fmt.Errorf("apply NetworkPolicy %s: %w", want.Name, err)
	}
	return "", nil
}

// topologyPods are the topology controller's pods: the labels its Deployment gives them, in
// the operator's namespace.
func topologyPods(operatorNamespace string) networkingv1.NetworkPolicyPeer {
	return netpolicy.OperatorPods(operatorNamespace, netpolicy.TopologyController)
}

// policyNotKept reports why the cluster's NetworkPolicy is not as wanted and returns it.
func policyNotKept(round Round, why string) string {
	round.Refused(valkeyv1.EventNetworkPolicyRefused, "ApplyNetworkPolicy", why)
	return why
}

// desiredNetworkPolicy admits to the cluster's pods: on the bus port, the cluster's own pods
// only (no controller speaks the bus); on the client port, those, the topology controller's
// pods in the operator's namespace, and spec.network.clientFrom, or anyone when clientFrom is
// empty (the same on tls.plaintextPort); on valkey-start's metrics port, the volume
// controller's pods in the operator's namespace and spec.network.metricsFrom. Egress is not
// restricted. Without an operator namespace (a controller run outside a pod) only the
// cluster's own pods, clientFrom and metricsFrom are admitted.
func desiredNetworkPolicy(vc *valkeyv1.ValkeyCluster, clientPort int, operatorNamespace string) *networkingv1.NetworkPolicy {
	pods := &metav1.LabelSelector{MatchLabels: map[string]string{
		valkeyv1.LabelCluster:   vc.Name,
		valkeyv1.LabelManagedBy: valkeyv1.ManagedByValue,
	}}
	members := []networkingv1.NetworkPolicyPeer{{PodSelector: pods}}
	trusted := members
	if operatorNamespace != "" {
		trusted = append(append([]networkingv1.NetworkPolicyPeer{}, members...), topologyPods(operatorNamespace))
	}
	clients := ingressRule(clientPort, nil) // anyone
	if vc.Spec.Network != nil && len(vc.Spec.Network.ClientFrom) > 0 {
		from := append([]networkingv1.NetworkPolicyPeer{}, trusted...)
		for _, p := range vc.Spec.Network.ClientFrom {
			from = append(from, *p.DeepCopy())
		}
		clients = ingressRule(clientPort, from)
	}
	if t := vc.Spec.TLS; t != nil && t.PlaintextPort != nil {
		// tls.plaintextPort serves the same clients, without TLS.
		clients.Ports = append(clients.Ports, networkingv1.NetworkPolicyPort{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(*t.PlaintextPort))})
	}
	ingress := []networkingv1.NetworkPolicyIngressRule{ingressRule(clientPort+busPortOffset, members), clients}
	if m := netpolicy.MetricsIngress(operatorNamespace, vc.Spec.Network); m != nil {
		ingress = append(ingress, *m)
	}
	return &networkingv1.NetworkPolicy{
		TypeMeta: metav1.TypeMeta{APIVersion: networkingv1.SchemeGroupVersion.String(), Kind: "NetworkPolicy"},
		ObjectMeta: metav1.ObjectMeta{
			Name: valkeyv1.NetworkPolicyName(vc.Name), Namespace: vc.Namespace, Labels: owned.ClusterLabels(vc.Name),
			OwnerReferences: []metav1.OwnerReference{clusterOwner(vc)},
		},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: *pods,
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress:     ingress,
		},
	}
}

// ingressRule admits from (anyone when nil) to one TCP port.
func ingressRule(port int, from []networkingv1.NetworkPolicyPeer) networkingv1.NetworkPolicyIngressRule {
	return networkingv1.NetworkPolicyIngressRule{
		Ports: []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt(port))}},
		From:  from,
	}
}
