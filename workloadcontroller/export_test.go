package workloadcontroller

import (
	corev1 "k8s.io/api/core/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// DesiredTemplate is the pod template (with its hash annotation) the controller would apply
// for node with opts: the specs use it to play a template an earlier release applied.
func DesiredTemplate(node *valkeyv1.ValkeyNode, opts Options) (corev1.PodTemplateSpec, error) {
	d, err := buildDesired(node, opts)
	if err != nil {
		return corev1.PodTemplateSpec{}, err
	}
	return d.template, nil
}
