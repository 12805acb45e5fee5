// Package netpolicy holds what the NetworkPolicies of the topology controller (a cluster's)
// and of the workload controller (a node's outside any cluster) share: the operator's own
// pods as peers, and the rule that lets the volume controller (and spec.network.metricsFrom)
// read valkey-start's metrics.
package netpolicy

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/valkeyconf"
)

// Components of the operator, as their Deployments label their pods
// (app.kubernetes.io/component).
const (
	TopologyController = "topology-controller"
	VolumeController   = "volume-controller"
)

// OperatorPods are one controller's pods: the labels its Deployment gives them, in the
// operator's namespace.
func OperatorPods(operatorNamespace, component string) networkingv1.NetworkPolicyPeer {
	return networkingv1.NetworkPolicyPeer{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: operatorNamespace}},
		PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{
			"app.kubernetes.io/name": "valkey-operator", "app.kubernetes.io/component": component,
		}},
	}
}

// MetricsIngress admits to valkey-start's metrics port the volume controller's pods (the
// volume's usage; not without an operator namespace: a controller run outside a pod) and the
// peers of spec.network.metricsFrom (a Prometheus). nil when it admits no one.
func MetricsIngress(operatorNamespace string, network *valkeyv1.NetworkSpec) *networkingv1.NetworkPolicyIngressRule {
	var from []networkingv1.NetworkPolicyPeer
	if operatorNamespace != "" {
		from = append(from, OperatorPods(operatorNamespace, VolumeController))
	}
	if network != nil {
		for _, p := range network.MetricsFrom {
			from = append(from, *p.DeepCopy())
		}
	}
	if len(from) == 0 {
		return nil
	}
	return &networkingv1.NetworkPolicyIngressRule{
		Ports: []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(valkeyconf.MetricsPort))}},
		From:  from,
	}
}
