package volumecontroller

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// clusterKind is the kind of the owner whose UID makes a node's claim identity.
const clusterKind = "ValkeyCluster"

// Identity is the owner a node's claim belongs to: "<cluster UID>/<node name>", or
// "<node UID>/<node name>" for a node without a ValkeyCluster owner.
func Identity(node *valkeyv1.ValkeyNode) string {
	uid := node.UID
	for _, ref := range node.OwnerReferences {
		if ref.Kind == clusterKind && strings.HasPrefix(ref.APIVersion, valkeyv1.GroupVersion.Group+"/") {
			uid = ref.UID
			break
		}
	}
	return string(uid) + "/" + node.Name
}

// identityNode is the node name part of a claim identity ("" when malformed).
func identityNode(identity string) string {
	_, node, ok := strings.Cut(identity, "/")
	if !ok {
		return ""
	}
	return node
}

// BuildClaim is the PersistentVolumeClaim a node with persistence asks for: ReadWriteOnce,
// the requested size and class, the node's labels and its identity. It has no
// ownerReference: the claim outlives the node and is only deleted under reclaimPolicy Delete.
func BuildClaim(node *valkeyv1.ValkeyNode) *corev1.PersistentVolumeClaim {
	p := node.Spec.Persistence
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:        valkeyv1.ClaimName(node.Name),
			Namespace:   node.Namespace,
			Labels:      valkeyv1.NodeLabels(node),
			Annotations: map[string]string{valkeyv1.AnnotationClaimIdentity: Identity(node)},
		},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: p.StorageClassName,
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: p.Size.DeepCopy()},
			},
		},
	}
}

// ownership says how a claim found under a node's claim name relates to the node.
type ownership int

const (
	// owned: the claim carries the node's identity.
	owned ownership = iota
	// adoptable: the claim was released by an earlier node of the same name.
	adoptable
	// foreign: the claim belongs to another identity and is never touched.
	foreign
)

// claimOwnership classifies a claim against the node that wants it.
func claimOwnership(node *valkeyv1.ValkeyNode, claim *corev1.PersistentVolumeClaim) ownership {
	id := claim.Annotations[valkeyv1.AnnotationClaimIdentity]
	if id == Identity(node) {
		return owned
	}
	if _, released := claim.Annotations[valkeyv1.AnnotationClaimReleased]; released && identityNode(id) == node.Name {
		return adoptable
	}
	return foreign
}

// nodeForClaim maps a claim to the node it is named after (false for other claims).
func nodeForClaim(claim types.NamespacedName) (types.NamespacedName, bool) {
	name, ok := strings.CutPrefix(claim.Name, "valkey-")
	if !ok {
		return types.NamespacedName{}, false
	}
	name, ok = strings.CutSuffix(name, "-data")
	if !ok || name == "" {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: claim.Namespace, Name: name}, true
}

// storage returns the storage quantity of a resource list and whether it is set.
func storage(l corev1.ResourceList) (resource.Quantity, bool) {
	q, ok := l[corev1.ResourceStorage]
	return q, ok
}
