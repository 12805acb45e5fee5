package access

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/topologycontroller/round"
)

// ClusterPassword returns the cluster's password Secret reference and the password in it.
// The Secret is read once per reconcile, past the cache (no Secret is cached or watched).
func (k *Keeper) ClusterPassword(ctx context.Context, vc *valkeyv1.ValkeyCluster) (*valkeyv1.SecretKeyRef, string, error) {
	ref, s, err := k.passwordSecret(ctx, vc)
	if err != nil {
		return nil, "", err
	}
	password, err := passwordIn(s, ref)
	return ref, password, err
}

// PasswordError is a password Secret the cluster cannot use. It is reported on the
// ValkeyCluster (Ready=False with its reason, and a Warning event) and looked at again later:
// Secrets a user makes are not watched.
type PasswordError struct{ Reason, Msg string }

func (e *PasswordError) Error() string { return e.Msg }

// passwordSecret returns the cluster's password Secret and its reference: spec.passwordSecret,
// or the generated Secret <cluster>-auth (see generatedSecret).
func (k *Keeper) passwordSecret(ctx context.Context, vc *valkeyv1.ValkeyCluster) (*valkeyv1.SecretKeyRef, *corev1.Secret, error) {
	if vc.Spec.PasswordSecret == nil || vc.Spec.PasswordSecret.Name == "" {
		return k.generatedSecret(ctx, vc)
	}
	ref := *vc.Spec.PasswordSecret
	if ref.Key == "" {
		ref.Key = valkeyv1.DefaultPasswordKey
	}
	var s corev1.Secret
	if err := k.APIReader.Get(ctx, client.ObjectKey{Namespace: vc.Namespace, Name: ref.Name}, &s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, &PasswordError{Reason: valkeyv1.ReasonPasswordSecretMissing, Msg: fmt.Sprintf("password Secret %s does not exist", ref.Name)}
		}
		return nil, nil, fmt.Errorf("get password Secret %s: %w", ref.Name, err)
	}
	return &ref, &s, nil
}

// generatedSecret returns the generated Secret <cluster>-auth, created (owned by the
// cluster) when missing. A generated Secret that disappears while the cluster has nodes is
// not made again: its servers run with the old password, and a new one would lock the
// operator and restarted nodes out of them.
func (k *Keeper) generatedSecret(ctx context.Context, vc *valkeyv1.ValkeyCluster) (*valkeyv1.SecretKeyRef, *corev1.Secret, error) {
	name := valkeyv1.PasswordSecretName(vc.Name)
	ref := &valkeyv1.SecretKeyRef{Name: name, Key: valkeyv1.DefaultPasswordKey}
	var s corev1.Secret
	err := k.APIReader.Get(ctx, client.ObjectKey{Namespace: vc.Namespace, Name: name}, &s)
	if err == nil {
		if err := k.notOwnedSecret(ctx, vc, &s); err != nil {
			return nil, nil, err
		}
		return ref, &s, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, nil, fmt.Errorf("get Secret %s: %w", name, err)
	}
	nodes, err := k.OwnedNodes(ctx, vc)
	if err != nil {
		return nil, nil, err
	}
	if nodes > 0 {
		return nil, nil, &PasswordError{Reason: valkeyv1.ReasonPasswordSecretMissing, Msg: fmt.Sprintf(
			"the generated password Secret %s was deleted while %d nodes run with its password; not generating a new one: "+
				"create %s again with key %q holding the servers' password (a running pod still has it: printenv VALKEY_PASSWORD)",
			name, nodes, name, valkeyv1.DefaultPasswordKey)}
	}
	created, err := k.createSecret(ctx, vc, name)
	return ref, created, err
}

// OwnedNodes counts the ValkeyNodes this cluster object made (nodes of an earlier cluster of
// the same name that are still going away are not counted).
func (k *Keeper) OwnedNodes(ctx context.Context, vc *valkeyv1.ValkeyCluster) (int, error) {
	var list valkeyv1.ValkeyNodeList
	if err := k.Client.List(ctx, &list, client.InNamespace(vc.Namespace), client.MatchingLabels{valkeyv1.LabelCluster: vc.Name}); err != nil {
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

// passwordIn is the password in the Secret s under ref's key.
func passwordIn(s *corev1.Secret, ref *valkeyv1.SecretKeyRef) (string, error) {
	pw, ok := s.Data[ref.Key]
	if !ok || len(pw) == 0 {
		return "", &PasswordError{Reason: valkeyv1.ReasonPasswordKeyMissing, Msg: fmt.Sprintf("password Secret %s has no value under key %q", ref.Name, ref.Key)}
	}
	return string(pw), nil
}

// PasswordRefused reports servers that refuse both the operator's user and the default
// user's password: neither value is one they know.
func PasswordRefused(st *round.State, ref *valkeyv1.SecretKeyRef) *PasswordError {
	var names []string
	for _, n := range st.Nodes {
		if m := st.Members[n.Name]; m != nil && m.Err != nil && round.IsAuthError(m.Err) {
			names = append(names, n.Name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	return &PasswordError{Reason: valkeyv1.ReasonPasswordRejected, Msg: fmt.Sprintf(
		"%d of %d servers refuse both the operator's user %s (Secret %s) and the default user's password (Secret %s) (%s): "+
			"neither is a value they know; nothing is done in Valkey until one is accepted: put back the value of either Secret that they know",
		len(names), len(st.Members), valkeyv1.OperatorUser, valkeyv1.OperatorSecretName(st.Cluster.Name), ref.Name, strings.Join(names, ", "))}
}
