package topologycontroller

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
	"valkey.io/operator/topologycontroller/round"
)

// clusterPassword returns the cluster's password Secret reference and the password in it.
// The Secret is read once per reconcile, past the cache (no Secret is cached or watched).
func (r *Reconciler) clusterPassword(ctx context.Context, vc *valkeyv1.ValkeyCluster) (*valkeyv1.SecretKeyRef, string, error) {
	ref, s, err := r.passwordSecret(ctx, vc)
	if err != nil {
		return nil, "", err
	}
	password, err := passwordIn(s, ref)
	return ref, password, err
}

// passwordError is a password Secret the cluster cannot use. It is reported on the
// ValkeyCluster (Ready=False with its reason, and a Warning event) and looked at again later:
// Secrets a user makes are not watched.
type passwordError struct{ reason, msg string }

func (e *passwordError) Error() string { return e.msg }

// passwordSecret returns the cluster's password Secret and its reference: spec.passwordSecret,
// or the generated Secret <cluster>-auth (see generatedSecret).
func (r *Reconciler) passwordSecret(ctx context.Context, vc *valkeyv1.ValkeyCluster) (*valkeyv1.SecretKeyRef, *corev1.Secret, error) {
	if vc.Spec.PasswordSecret == nil || vc.Spec.PasswordSecret.Name == "" {
		return r.generatedSecret(ctx, vc)
	}
	ref := *vc.Spec.PasswordSecret
	if ref.Key == "" {
		ref.Key = valkeyv1.DefaultPasswordKey
	}
	var s corev1.Secret
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: vc.Namespace, Name: ref.Name}, &s); err != nil {
		if isNotFound(err) {
			return nil, nil, &passwordError{valkeyv1.ReasonPasswordSecretMissing, fmt.Sprintf("password Secret %s does not exist", ref.Name)}
		}
		return nil, nil, fmt.Errorf("get password Secret %s: %w", ref.Name, err)
	}
	return &ref, &s, nil
}

// generatedSecret returns the generated Secret <cluster>-auth, created (owned by the
// cluster) when missing. A generated Secret that disappears while the cluster has nodes is
// not made again: its servers run with the old password, and a new one would lock the
// operator and restarted nodes out of them.
func (r *Reconciler) generatedSecret(ctx context.Context, vc *valkeyv1.ValkeyCluster) (*valkeyv1.SecretKeyRef, *corev1.Secret, error) {
	name := valkeyv1.PasswordSecretName(vc.Name)
	ref := &valkeyv1.SecretKeyRef{Name: name, Key: valkeyv1.DefaultPasswordKey}
	var s corev1.Secret
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: vc.Namespace, Name: name}, &s)
	if err == nil {
		if err := r.notOwnedSecret(ctx, vc, &s); err != nil {
			return nil, nil, err
		}
		return ref, &s, nil
	}
	if !isNotFound(err) {
		return nil, nil, fmt.Errorf("get Secret %s: %w", name, err)
	}
	nodes, err := r.ownedNodes(ctx, vc)
	if err != nil {
		return nil, nil, err
	}
	if nodes > 0 {
		return nil, nil, &passwordError{valkeyv1.ReasonPasswordSecretMissing, fmt.Sprintf(
			"the generated password Secret %s was deleted while %d nodes run with its password; not generating a new one: "+
				"create %s again with key %q holding the servers' password (a running pod still has it: printenv VALKEY_PASSWORD)",
			name, nodes, name, valkeyv1.DefaultPasswordKey)}
	}
	created, err := r.createSecret(ctx, vc, name)
	return ref, created, err
}

// ownedNodes counts the ValkeyNodes this cluster object made (nodes of an earlier cluster of
// the same name that are still going away are not counted).
func (r *Reconciler) ownedNodes(ctx context.Context, vc *valkeyv1.ValkeyCluster) (int, error) {
	var list valkeyv1.ValkeyNodeList
	if err := r.List(ctx, &list, client.InNamespace(vc.Namespace), client.MatchingLabels{valkeyv1.LabelCluster: vc.Name}); err != nil {
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
		return "", &passwordError{valkeyv1.ReasonPasswordKeyMissing, fmt.Sprintf("password Secret %s has no value under key %q", ref.Name, ref.Key)}
	}
	return string(pw), nil
}

// passwordRefused reports servers that refuse both the operator's user and the default
// user's password: neither value is one they know.
func passwordRefused(st *clusterState, ref *valkeyv1.SecretKeyRef) *passwordError {
	var names []string
	for _, n := range st.Nodes {
		if m := st.Members[n.Name]; m != nil && m.Err != nil && round.IsAuthError(m.Err) {
			names = append(names, n.Name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	return &passwordError{valkeyv1.ReasonPasswordRejected, fmt.Sprintf(
		"%d of %d servers refuse both the operator's user %s (Secret %s) and the default user's password (Secret %s) (%s): "+
			"neither is a value they know; nothing is done in Valkey until one is accepted: put back the value of either Secret that they know",
		len(names), len(st.Members), valkeyv1.OperatorUser, valkeyv1.OperatorSecretName(st.Cluster.Name), ref.Name, strings.Join(names, ", "))}
}

// passwordRecheck is how often an unusable password Secret is looked at again.
const passwordRecheck = 10 * time.Second

// reportPassword reports an unusable password Secret: Ready=False with its reason, and a
// Warning event when it is new (see reportUnusable).
func (r *Reconciler) reportPassword(ctx context.Context, vc *valkeyv1.ValkeyCluster, pe *passwordError) (ctrl.Result, error) {
	return r.reportUnusable(ctx, vc, valkeyv1.ConditionReady, "ReadPassword", pe.reason, pe.msg)
}

// reportUnusable reports a Secret the cluster cannot use: the condition cond False with
// reason and msg (the other conditions and the counters stay as last observed), and a
// Warning event when it is new. Nothing else is done this round. The Secret is looked at
// again after passwordRecheck: a user's Secret is not watched.
func (r *Reconciler) reportUnusable(ctx context.Context, vc *valkeyv1.ValkeyCluster, cond, action, reason, msg string) (ctrl.Result, error) {
	if cur := status.Get(vc.Status.Conditions, cond); cur == nil || cur.Reason != reason || cur.Message != msg {
		r.Recorder.Eventf(vc, nil, corev1.EventTypeWarning, reason, action, "%s", msg)
	}
	st := *vc.Status.DeepCopy()
	st.Conditions = []metav1.Condition{status.Condition(cond, false, reason, msg)}
	for _, t := range append(append([]string{valkeyv1.ConditionRestored}, valkeyv1.ClusterConditions...), valkeyv1.AccessConditions...) {
		if c := status.Get(vc.Status.Conditions, t); c != nil && t != cond {
			kept := *c
			kept.ObservedGeneration = 0 // written for the current generation, as before
			st.Conditions = append(st.Conditions, kept)
		}
	}
	if err := r.Status.ApplyCluster(ctx, vc, st); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: passwordRecheck}, nil
}
