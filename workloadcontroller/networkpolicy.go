package workloadcontroller

import (
	"context"
	"fmt"
	"strings"

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
	"valkey.io/operator/internal/status"
)

// standalonePolicy keeps the NetworkPolicy of a node outside any cluster (a cluster's nodes
// are covered by the cluster's policy, which the topology controller writes): see
// desiredNodePolicy. It deletes its own when spec.network.policy is Disabled. It returns why
// the policy is not as wanted ("" when it is): a same-named policy of someone else, left
// alone, or one the API server refuses (a clientFrom peer).
func (r *Reconciler) standalonePolicy(ctx context.Context, node *valkeyv1.ValkeyNode) (string, error) {
	if node.Spec.ClusterName != "" {
		return "", nil
	}
	name := valkeyv1.WorkloadName(node.Name)
	var cur networkingv1.NetworkPolicy
	err := r.Get(ctx, client.ObjectKey{Namespace: node.Namespace, Name: name}, &cur)
	if err != nil && !apierrors.IsNotFound(err) {
		return "", fmt.Errorf("get NetworkPolicy %s: %w", name, err)
	}
	ours := err == nil && metav1.IsControlledBy(&cur, node)
	if !node.Spec.Network.PolicyEnabled() {
		if ours {
			return "", r.deleteObject(ctx, &cur)
		}
		return "", nil
	}
	want := desiredNodePolicy(node, r.Options.OperatorNamespace)
	if ours && equality.Semantic.DeepEqual(cur.Spec, want.Spec) {
		return "", nil
	}
	if !ours {
		foreign, err := owned.Foreign(ctx, r.APIReader, node, want)
		if err != nil {
			return "", err
		}
		if foreign {
			return fmt.Sprintf("NetworkPolicy %s exists and is not owned by ValkeyNode %s: it is left as it is; delete or rename it so that the operator can make its own, or set spec.network.policy: Disabled",
				name, node.Name), nil
		}
	}
	err = owned.Apply(ctx, r.Client, want, valkeyv1.FieldManagerWorkload)
	if apierrors.IsInvalid(err) {
		return fmt.Sprintf("NetworkPolicy %s refused: %v; correct spec.network.clientFrom", name, err), nil
	}
	if err != nil {
		return "", fmt.Errorf("apply NetworkPolicy %s: %w", name, err)
	}
	return "", nil
}

// desiredNodePolicy admits to the node's pod its client port (and tls.plaintextPort) from
// spec.network.clientFrom, or from anyone when it is empty, and nothing on any other port
// but valkey-start's metrics port to the volume controller of operatorNamespace and
// spec.network.metricsFrom (a node outside any cluster has no bus peers). Egress is not restricted.
func desiredNodePolicy(node *valkeyv1.ValkeyNode, operatorNamespace string) *networkingv1.NetworkPolicy {
	ports := []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(ClientPort))}}
	if t := node.Spec.TLS; t != nil && t.PlaintextPort != nil {
		ports = append(ports, networkingv1.NetworkPolicyPort{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(*t.PlaintextPort))})
	}
	var from []networkingv1.NetworkPolicyPeer
	if node.Spec.Network != nil {
		for _, p := range node.Spec.Network.ClientFrom {
			from = append(from, *p.DeepCopy())
		}
	}
	ingress := []networkingv1.NetworkPolicyIngressRule{{Ports: ports, From: from}}
	if m := netpolicy.MetricsIngress(operatorNamespace, node.Spec.Network); m != nil {
		ingress = append(ingress, *m)
	}
	return &networkingv1.NetworkPolicy{
		TypeMeta: metav1.TypeMeta{APIVersion: networkingv1.SchemeGroupVersion.String(), Kind: "NetworkPolicy"},
		ObjectMeta: metav1.ObjectMeta{
			Name: valkeyv1.WorkloadName(node.Name), Namespace: node.Namespace, Labels: valkeyv1.NodeLabels(node),
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: valkeyv1.GroupVersion.String(), Kind: "ValkeyNode", Name: node.Name, UID: node.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: selectorLabels(node)},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress:     ingress,
		},
	}
}

// policyNotKept adds why the node's policy is not as wanted to WorkloadReady's message (the
// pod runs all the same), with a Warning event when the condition did not say so already.
func (r *Reconciler) policyNotKept(node *valkeyv1.ValkeyNode, ready metav1.Condition, why string) metav1.Condition {
	if old := status.Get(node.Status.Conditions, valkeyv1.ConditionWorkloadReady); old == nil || !strings.Contains(old.Message, why) {
		r.Recorder.Eventf(node, nil, corev1.EventTypeWarning, valkeyv1.EventNetworkPolicyRefused, "ApplyNetworkPolicy", "%s", why)
	}
	ready.Message += "; " + why
	return ready
}
