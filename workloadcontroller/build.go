package workloadcontroller

import (
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// The objects below are apply configurations: server-side apply makes the controller's field
// manager own exactly the fields they set, and removes a field it owned once a later apply
// leaves it out (the roll-from annotation, a volume source, a password variable...).

// ownerRef makes the node the controller owner of what is built for it.
func ownerRef(node *valkeyv1.ValkeyNode) *metav1ac.OwnerReferenceApplyConfiguration {
	return metav1ac.OwnerReference().
		WithAPIVersion(valkeyv1.GroupVersion.String()).
		WithKind("ValkeyNode").
		WithName(node.Name).
		WithUID(node.UID).
		WithController(true).
		WithBlockOwnerDeletion(true)
}

// buildConfigMap holds the rendered valkey.conf.
func buildConfigMap(node *valkeyv1.ValkeyNode, conf string) *corev1ac.ConfigMapApplyConfiguration {
	return corev1ac.ConfigMap(valkeyv1.ConfigMapName(node.Name), node.Namespace).
		WithLabels(valkeyv1.NodeLabels(node)).
		WithOwnerReferences(ownerRef(node)).
		WithData(map[string]string{ConfigFile: conf})
}

// buildWorkload runs the node as a one-replica workload of the desired kind, with the
// desired pod template. A StatefulSet uses RollingUpdate, which replaces the pod when the
// template changes (the controller only changes it once the roll is approved), and Parallel
// management, which replaces a broken pod without waiting for it to be Ready. A Deployment
// (no persistence) uses Recreate, which never runs two pods for one node. rollFrom, when
// not empty, is recorded as AnnotationRollFrom.
func buildWorkload(node *valkeyv1.ValkeyNode, d *desired, rollFrom string) runtime.ApplyConfiguration {
	name := valkeyv1.WorkloadName(node.Name)
	annotations := map[string]string{AnnotationTemplateHash: d.hash}
	if rollFrom != "" {
		annotations[AnnotationRollFrom] = rollFrom
	}
	selector := metav1ac.LabelSelector().WithMatchLabels(selectorLabels(node))
	if d.kind == valkeyv1.WorkloadDeployment {
		return appsv1ac.Deployment(name, node.Namespace).
			WithLabels(valkeyv1.NodeLabels(node)).
			WithAnnotations(annotations).
			WithOwnerReferences(ownerRef(node)).
			WithSpec(appsv1ac.DeploymentSpec().
				WithReplicas(1).
				WithSelector(selector).
				WithTemplate(templateConfig(d.template)).
				WithStrategy(appsv1ac.DeploymentStrategy().WithType(appsv1.RecreateDeploymentStrategyType)))
	}
	spec := appsv1ac.StatefulSetSpec().
		WithReplicas(1).
		WithSelector(selector).
		WithTemplate(templateConfig(d.template)).
		WithPodManagementPolicy(appsv1.ParallelPodManagement).
		WithUpdateStrategy(appsv1ac.StatefulSetUpdateStrategy().WithType(appsv1.RollingUpdateStatefulSetStrategyType))
	if d.serviceName != "" {
		spec.WithServiceName(d.serviceName)
	}
	return appsv1ac.StatefulSet(name, node.Namespace).
		WithLabels(valkeyv1.NodeLabels(node)).
		WithAnnotations(annotations).
		WithOwnerReferences(ownerRef(node)).
		WithSpec(spec)
}

// templateConfig is the apply configuration of a pod template: the fields its JSON form
// carries. The template is built as a typed object because its template hash is computed
// from that form.
func templateConfig(tmpl corev1.PodTemplateSpec) *corev1ac.PodTemplateSpecApplyConfiguration {
	b, err := json.Marshal(tmpl)
	if err != nil {
		panic(fmt.Sprintf("marshal pod template: %v", err)) // plain structs always marshal
	}
	out := &corev1ac.PodTemplateSpecApplyConfiguration{}
	if err := json.Unmarshal(b, out); err != nil {
		panic(fmt.Sprintf("pod template as apply configuration: %v", err)) // same schema
	}
	return out
}
