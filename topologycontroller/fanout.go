package topologycontroller

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// passwordError is a password Secret the cluster cannot use. It is reported on the
// ValkeyCluster (Ready=False with its reason, and a Warning event) and looked at again later:
// Secrets a user makes are not watched.
type passwordError struct{ reason, msg string }

func (e *passwordError) Error() string { return e.msg }

// ensureSecret returns the cluster's password Secret reference: spec.passwordSecret, or the
// generated Secret <cluster>-auth, created (owned by the cluster) when missing. A generated
// Secret that disappears while the cluster has nodes is not made again: its servers run with
// the old password, and a new one would lock the operator and restarted nodes out of them.
func (r *Reconciler) ensureSecret(ctx context.Context, vc *valkeyv1.ValkeyCluster) (*valkeyv1.SecretKeyRef, error) {
	if vc.Spec.PasswordSecret != nil && vc.Spec.PasswordSecret.Name != "" {
		ref := *vc.Spec.PasswordSecret
		if ref.Key == "" {
			ref.Key = valkeyv1.DefaultPasswordKey
		}
		return &ref, nil
	}
	name := valkeyv1.PasswordSecretName(vc.Name)
	ref := &valkeyv1.SecretKeyRef{Name: name, Key: valkeyv1.DefaultPasswordKey}
	var s corev1.Secret
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: vc.Namespace, Name: name}, &s)
	if err == nil {
		return ref, nil
	}
	if !isNotFound(err) {
		return nil, fmt.Errorf("get Secret %s: %w", name, err)
	}
	nodes, err := r.ownedNodes(ctx, vc)
	if err != nil {
		return nil, err
	}
	if nodes > 0 {
		return nil, &passwordError{valkeyv1.ReasonPasswordSecretMissing, fmt.Sprintf(
			"the generated password Secret %s was deleted while %d nodes run with its password; not generating a new one: "+
				"create %s again with key %q holding the servers' password (a running pod still has it: printenv VALKEY_PASSWORD)",
			name, nodes, name, valkeyv1.DefaultPasswordKey)}
	}
	buf := make([]byte, 24)
	if _, err := rand.Read(buf); err != nil {
		return nil, fmt.Errorf("generate password: %w", err)
	}
	s = corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: vc.Namespace,
			Labels: map[string]string{
				valkeyv1.LabelCluster:   vc.Name,
				valkeyv1.LabelManagedBy: valkeyv1.ManagedByValue,
				valkeyv1.LabelName:      valkeyv1.NameValue,
			},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{valkeyv1.DefaultPasswordKey: []byte(base64.RawURLEncoding.EncodeToString(buf))},
	}
	if err := controllerutil.SetControllerReference(vc, &s, r.Client.Scheme()); err != nil {
		return nil, err
	}
	if err := r.Client.Create(ctx, &s); err != nil && !isAlreadyExists(err) {
		return nil, fmt.Errorf("create Secret %s: %w", name, err)
	}
	r.Recorder.Eventf(vc, nil, corev1.EventTypeNormal, "PasswordGenerated", "CreateSecret", "generated password Secret %s", name)
	return ref, nil
}

// ownedNodes counts the ValkeyNodes this cluster object made (nodes of an earlier cluster of
// the same name that are still going away are not counted).
func (r *Reconciler) ownedNodes(ctx context.Context, vc *valkeyv1.ValkeyCluster) (int, error) {
	var list valkeyv1.ValkeyNodeList
	if err := r.Client.List(ctx, &list, client.InNamespace(vc.Namespace), client.MatchingLabels{valkeyv1.LabelCluster: vc.Name}); err != nil {
		return 0, fmt.Errorf("list ValkeyNodes of %s: %w", vc.Name, err)
	}
	n := 0
	for i := range list.Items {
		if metav1.IsControlledBy(&list.Items[i], vc) {
			n++
		}
	}
	return n, nil
}

// password reads the password from the Secret (directly: a user's Secret is not cached).
func (r *Reconciler) password(ctx context.Context, ns string, ref *valkeyv1.SecretKeyRef) (string, error) {
	var s corev1.Secret
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.Name}, &s); err != nil {
		if isNotFound(err) {
			return "", &passwordError{valkeyv1.ReasonPasswordSecretMissing, fmt.Sprintf("password Secret %s does not exist", ref.Name)}
		}
		return "", fmt.Errorf("get password Secret %s: %w", ref.Name, err)
	}
	pw, ok := s.Data[ref.Key]
	if !ok || len(pw) == 0 {
		return "", &passwordError{valkeyv1.ReasonPasswordKeyMissing, fmt.Sprintf("password Secret %s has no value under key %q", ref.Name, ref.Key)}
	}
	return string(pw), nil
}

// desiredNodeSpec is the spec of node (shard, replica) of vc.
func desiredNodeSpec(vc *valkeyv1.ValkeyCluster, shard, replica int32, ref *valkeyv1.SecretKeyRef) valkeyv1.ValkeyNodeSpec {
	return valkeyv1.ValkeyNodeSpec{
		ClusterName:    vc.Name,
		Shard:          shard,
		ReplicaIndex:   replica,
		Image:          vc.Spec.Image,
		Resources:      *vc.Spec.Resources.DeepCopy(),
		Config:         copyMap(vc.Spec.Config),
		WorkloadType:   vc.Spec.WorkloadType,
		Persistence:    vc.Spec.Persistence.DeepCopy(),
		PasswordSecret: ref.DeepCopy(),
	}
}

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// wanted tells whether (shard, replica) is part of vc's spec.
func wanted(vc *valkeyv1.ValkeyCluster, shard, replica int32) bool {
	return shard < vc.Spec.Shards && replica <= vc.Spec.Replicas
}

// fanOut creates the missing ValkeyNodes of vc and brings the spec of the existing ones up
// to date. It returns every ValkeyNode of the cluster (wanted or not, deleting or not).
// Nodes that are no longer wanted are removed by scaleIn once drained.
func (r *Reconciler) fanOut(ctx context.Context, vc *valkeyv1.ValkeyCluster, ref *valkeyv1.SecretKeyRef) ([]*valkeyv1.ValkeyNode, error) {
	var list valkeyv1.ValkeyNodeList
	if err := r.Client.List(ctx, &list, client.InNamespace(vc.Namespace), client.MatchingLabels{valkeyv1.LabelCluster: vc.Name}); err != nil {
		return nil, fmt.Errorf("list ValkeyNodes of %s: %w", vc.Name, err)
	}
	existing := map[string]*valkeyv1.ValkeyNode{}
	var nodes []*valkeyv1.ValkeyNode
	for i := range list.Items {
		n := &list.Items[i]
		if n.Spec.ClusterName != vc.Name || !metav1.IsControlledBy(n, vc) {
			continue
		}
		existing[n.Name] = n
		nodes = append(nodes, n)
	}
	for shard := int32(0); shard < vc.Spec.Shards; shard++ {
		for replica := int32(0); replica <= vc.Spec.Replicas; replica++ {
			name := valkeyv1.NodeName(vc.Name, shard, replica)
			spec := desiredNodeSpec(vc, shard, replica, ref)
			n, ok := existing[name]
			if !ok {
				n = &valkeyv1.ValkeyNode{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: vc.Namespace}, Spec: spec}
				n.Labels = valkeyv1.NodeLabels(n)
				if err := controllerutil.SetControllerReference(vc, n, r.Client.Scheme()); err != nil {
					return nil, err
				}
				if err := r.Client.Create(ctx, n); err != nil {
					if isAlreadyExists(err) {
						continue // not ours or not in the cache yet: the next reconcile sees it
					}
					return nil, fmt.Errorf("create ValkeyNode %s: %w", name, err)
				}
				nodes = append(nodes, n)
				continue
			}
			if !n.DeletionTimestamp.IsZero() {
				continue
			}
			labels := valkeyv1.NodeLabels(&valkeyv1.ValkeyNode{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec})
			if equality.Semantic.DeepEqual(n.Spec, spec) && hasLabels(n.Labels, labels) {
				continue
			}
			upd := n.DeepCopy()
			upd.Spec = spec
			if upd.Labels == nil {
				upd.Labels = map[string]string{}
			}
			for k, v := range labels {
				upd.Labels[k] = v
			}
			if err := r.Client.Update(ctx, upd); err != nil {
				return nil, fmt.Errorf("update ValkeyNode %s: %w", name, err)
			}
			*n = *upd
		}
	}
	sortNodes(nodes)
	return nodes, nil
}

func hasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}
