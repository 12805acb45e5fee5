package workloadcontroller

import (
	"crypto/sha256"
	"encoding/hex"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
	"valkey.io/operator/internal/valkeyconf"
)

// The cache transforms below drop what the controller never reads of a cached object (a
// per-type Transform replaces the managers' default one, so each also drops managedFields).
// The controller only writes by server-side apply of configurations it builds, never by
// updating a cached object, so nothing dropped here is ever written back.

// slimWorkload keeps of a StatefulSet or Deployment what readWorkload reads: its metadata
// but labels (name, UID, owner, annotations such as AnnotationRollFrom), replicas, a
// StatefulSet's serviceName, the pod template's AnnotationTemplateHash, and the status (a
// Deployment's ReplicaFailure). The template is compared by that hash; the rest of the spec
// (the pod spec, the largest part, selector, claim templates) is read, when it is, from the
// API server (appliedStartImage, replace).
func slimWorkload(o any) (any, error) {
	switch w := o.(type) {
	case *appsv1.StatefulSet:
		slimMeta(&w.ObjectMeta)
		w.Spec = appsv1.StatefulSetSpec{Replicas: w.Spec.Replicas, ServiceName: w.Spec.ServiceName, Template: hashOnly(w.Spec.Template)}
	case *appsv1.Deployment:
		slimMeta(&w.ObjectMeta)
		w.Spec = appsv1.DeploymentSpec{Replicas: w.Spec.Replicas, Template: hashOnly(w.Spec.Template)}
	}
	return o, nil
}

// slimMeta drops the labels and managedFields of a cached object whose labels are never
// read (the cache selects on them at the API server).
func slimMeta(m *metav1.ObjectMeta) {
	m.ManagedFields, m.Labels = nil, nil
}

// hashOnly is a pod template reduced to its AnnotationTemplateHash.
func hashOnly(t corev1.PodTemplateSpec) corev1.PodTemplateSpec {
	h, ok := t.Annotations[AnnotationTemplateHash]
	if !ok {
		return corev1.PodTemplateSpec{}
	}
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{AnnotationTemplateHash: h}}}
}

// readConditions are the ValkeyNode conditions the controller reads: its own, and those it
// waits for (nodePredicate).
var readConditions = append([]string{valkeyv1.ConditionVolumeReady, valkeyv1.ConditionRollApproved,
	valkeyv1.ConditionDrained, valkeyv1.ConditionConfigApplied, valkeyv1.ConditionPaused}, valkeyv1.WorkloadConditions...)

// slimValkeyNode drops of a cached ValkeyNode what the controller never reads: the other
// controllers' conditions but those of readConditions, status.volume and status.topology.
// The spec and status.workload are kept whole (the workload is built from the spec, and the
// status apply compares its share with status.workload). The controller writes a node only
// by its status apply, never from a cached copy.
func slimValkeyNode(o any) (any, error) {
	if n, ok := o.(*valkeyv1.ValkeyNode); ok {
		n.ManagedFields = nil
		n.Status.Conditions = status.Only(n.Status.Conditions, readConditions...)
		n.Status.Volume, n.Status.Topology = nil, nil
	}
	return o, nil
}

// slimPod keeps of a pod its metadata (name, labels, AnnotationTemplateHash, timestamps),
// status (phase, IP, conditions, container states) and spec.nodeName (IndexPodNodeName,
// nodeLoss): see podReadiness, observedWorkload and nodeLoss.
func slimPod(o any) (any, error) {
	if p, ok := o.(*corev1.Pod); ok {
		p.ManagedFields = nil
		p.Spec = corev1.PodSpec{NodeName: p.Spec.NodeName}
	}
	return o, nil
}

// slimNode drops what the controller never reads of a Kubernetes node: only its labels
// and Ready condition are read (nodeLoss, nodeReadyChanged).
func slimNode(o any) (any, error) {
	if n, ok := o.(*corev1.Node); ok {
		n.ManagedFields = nil
		n.Status.Images = nil
		n.Status.VolumesInUse = nil
		n.Status.VolumesAttached = nil
	}
	return o, nil
}

// cachedConfigDigest is an annotation that only the cached copy of a node's ConfigMap has:
// the SHA-256 of its valkey.conf, which slimConfigMap keeps in place of the content.
const cachedConfigDigest = "valkey.io/cached-config-sha256"

// cachedRestartDigest is the SHA-256 of the ConfigMap's valkey.conf without the lines
// CONFIG SET applies (valkeyconf.RestartPart), also only on the cached copy.
const cachedRestartDigest = "valkey.io/cached-restart-config-sha256"

// slimConfigMap keeps of a ConfigMap its metadata but labels and the digests of its
// valkey.conf: the controller only compares the content with the desired one (configMatches,
// restartConfigMatches).
func slimConfigMap(o any) (any, error) {
	if cm, ok := o.(*corev1.ConfigMap); ok {
		slimMeta(&cm.ObjectMeta)
		if conf, ok := cm.Data[ConfigFile]; ok {
			if cm.Annotations == nil {
				cm.Annotations = map[string]string{}
			}
			cm.Annotations[cachedConfigDigest] = configDigest(conf)
			cm.Annotations[cachedRestartDigest] = configDigest(valkeyconf.RestartPart(conf))
		}
		cm.Data, cm.BinaryData = nil, nil
	}
	return o, nil
}

// configMatches tells whether the cached ConfigMap cm holds conf as its valkey.conf.
func configMatches(cm *corev1.ConfigMap, conf string) bool {
	d, ok := cm.Annotations[cachedConfigDigest]
	return ok && d == configDigest(conf)
}

// restartConfigMatches tells whether the cached ConfigMap cm holds conf apart from the
// values CONFIG SET applies.
func restartConfigMatches(cm *corev1.ConfigMap, conf string) bool {
	d, ok := cm.Annotations[cachedRestartDigest]
	return ok && d == configDigest(valkeyconf.RestartPart(conf))
}

func configDigest(conf string) string {
	sum := sha256.Sum256([]byte(conf))
	return hex.EncodeToString(sum[:])
}
