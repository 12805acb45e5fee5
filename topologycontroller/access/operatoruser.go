package access

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// operatorPassword returns the password of the operator's own user on the cluster's
// servers, from the generated Secret <cluster>-operator, created (owned by the cluster) when
// missing. It is not made again when it disappears from a cluster whose servers started
// with it (the ACL Secret <cluster>-acl exists): running pods hold the old password for
// their probes and replication. A cluster upgraded from a version without the operator's
// user has no ACL Secret yet: its Secret is created, and the user is created live.
func (k *Keeper) operatorPassword(ctx context.Context, vc *valkeyv1.ValkeyCluster) (string, error) {
	name := valkeyv1.OperatorSecretName(vc.Name)
	var s corev1.Secret
	err := k.APIReader.Get(ctx, client.ObjectKey{Namespace: vc.Namespace, Name: name}, &s)
	switch {
	case err == nil:
		if err := k.notOwnedSecret(ctx, vc, &s); err != nil {
			return "", err
		}
	case !apierrors.IsNotFound(err):
		return "", fmt.Errorf("get Secret %s: %w", name, err)
	default:
		started, err := k.serversStartedWithUsers(ctx, vc)
		if err != nil {
			return "", err
		}
		if started {
			return "", &PasswordError{Reason: valkeyv1.ReasonPasswordSecretMissing, Msg: fmt.Sprintf(
				"the operator's Secret %s was deleted while the cluster's servers run with its password; not generating a new one: "+
					"create %s again with key %q holding it (a running pod still has it: printenv VALKEY_OPERATOR_PASSWORD)",
				name, name, valkeyv1.DefaultPasswordKey)}
		}
		created, err := k.createSecret(ctx, vc, name)
		if err != nil {
			return "", err
		}
		s = *created
	}
	pw := s.Data[valkeyv1.DefaultPasswordKey]
	if len(pw) == 0 {
		return "", &PasswordError{Reason: valkeyv1.ReasonPasswordKeyMissing, Msg: fmt.Sprintf(
			"the operator's Secret %s has no value under key %q", name, valkeyv1.DefaultPasswordKey)}
	}
	return string(pw), nil
}

// serversStartedWithUsers: the cluster's ACL Secret exists, so its servers may have started
// with the operator's user. An ACL Secret that is not this cluster's (notOwnedSecret) is
// reported as such.
func (k *Keeper) serversStartedWithUsers(ctx context.Context, vc *valkeyv1.ValkeyCluster) (bool, error) {
	var s corev1.Secret
	err := k.APIReader.Get(ctx, client.ObjectKey{Namespace: vc.Namespace, Name: valkeyv1.ACLSecretName(vc.Name)}, &s)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("get Secret %s: %w", valkeyv1.ACLSecretName(vc.Name), err)
	}
	if err := k.notOwnedSecret(ctx, vc, &s); err != nil {
		return false, err
	}
	return true, nil
}
