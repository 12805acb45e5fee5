package access

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/owned"
	"valkey.io/operator/topologycontroller/round"
)

// createSecret creates the generated Secret name with a random password, owned by vc. When
// a Secret of that name appeared since it was read, that one is read and used only if it
// passes the check a Secret read in the first place passes (notOwnedSecret): another
// reconcile of this cluster made it, or it is usable as one found there would be. Someone
// else's, made in between, is refused as one placed before would be.
func (k *Keeper) createSecret(ctx context.Context, vc *valkeyv1.ValkeyCluster, name string) (*corev1.Secret, error) {
	buf := make([]byte, 24)
	if _, err := rand.Read(buf); err != nil {
		return nil, fmt.Errorf("generate password: %w", err)
	}
	s, err := k.ownedSecret(vc, name, corev1.SecretTypeOpaque,
		map[string][]byte{valkeyv1.DefaultPasswordKey: []byte(base64.RawURLEncoding.EncodeToString(buf))})
	if err != nil {
		return nil, err
	}
	round.SecretWriting(ctx, client.ObjectKeyFromObject(s))
	err = k.Client.Create(ctx, s)
	if apierrors.IsAlreadyExists(err) {
		var found corev1.Secret
		if err := k.APIReader.Get(ctx, client.ObjectKeyFromObject(s), &found); err != nil {
			return nil, fmt.Errorf("get Secret %s: %w", name, err)
		}
		if err := k.notOwnedSecret(ctx, vc, &found); err != nil {
			return nil, err
		}
		return &found, nil
	}
	if err != nil {
		return nil, fmt.Errorf("create Secret %s: %w", name, err)
	}
	round.SecretWritten(ctx, s)
	k.Recorder.Eventf(vc, nil, corev1.EventTypeNormal, valkeyv1.EventPasswordGenerated, "CreateSecret", "generated password Secret %s", name)
	return s, nil
}

// ownedSecret is the Secret name of vc's namespace holding data, with the cluster's labels
// and vc as its controller, as the controller makes its generated Secrets.
func (k *Keeper) ownedSecret(vc *valkeyv1.ValkeyCluster, name string, typ corev1.SecretType, data map[string][]byte) (*corev1.Secret, error) {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: vc.Namespace, Labels: owned.ClusterLabels(vc.Name)},
		Type:       typ,
		Data:       data,
	}
	return s, controllerutil.SetControllerReference(vc, s, k.Client.Scheme())
}

// notOwnedSecret refuses a generated Secret (<cluster>-auth, -operator, -acl) that is not
// this cluster's: one controlled by another object (by UID), usually the Secret of a deleted
// cluster of the same name that garbage collection has not removed yet, whose password is
// not this cluster's and which replacing would take from its owner; and one without a
// controller (someone else made it) while the cluster has no node running with it, unless
// annotated valkey.io/adopt=true. A Secret without a controller is used once the cluster's
// nodes exist: that is a Secret restored by its user after it was deleted.
func (k *Keeper) notOwnedSecret(ctx context.Context, vc *valkeyv1.ValkeyCluster, s *corev1.Secret) error {
	ref := metav1.GetControllerOf(s)
	if ref != nil && ref.UID == vc.UID {
		return nil
	}
	if ref != nil {
		return &PasswordError{Reason: valkeyv1.ReasonPasswordSecretNotOwned, Msg: fmt.Sprintf(
			"the Secret %s belongs to %s %s (uid %s), not to this ValkeyCluster (uid %s): it is neither used nor replaced, and no node is started; "+
				"garbage collection removes it when its owner is gone (or delete it), then a new one is generated; to keep a password of it, name a copy of it in spec.passwordSecret",
			s.Name, ref.Kind, ref.Name, ref.UID, vc.UID)}
	}
	if s.Annotations[valkeyv1.AnnotationAdopt] == "true" {
		return nil
	}
	nodes, err := k.OwnedNodes(ctx, vc)
	if err != nil || nodes > 0 {
		return err
	}
	return &PasswordError{Reason: valkeyv1.ReasonPasswordSecretNotOwned, Msg: fmt.Sprintf(
		"the Secret %s was not made by the operator and this ValkeyCluster has no node yet: it is neither used nor replaced, and no node is started; "+
			"if it is yours to give this cluster (restored from a backup), annotate it %s=true; otherwise delete it or name the cluster otherwise",
		s.Name, valkeyv1.AnnotationAdopt)}
}

// WriteSecret creates the Secret name (owned by vc) with data, or replaces the data of the
// existing s.
func (k *Keeper) WriteSecret(ctx context.Context, vc *valkeyv1.ValkeyCluster, s *corev1.Secret, exists bool, name string, typ corev1.SecretType, data map[string][]byte) error {
	if exists {
		s.Data = data
		round.SecretWriting(ctx, client.ObjectKeyFromObject(s))
		if err := k.Client.Update(ctx, s); err != nil {
			return fmt.Errorf("update Secret %s: %w", name, err)
		}
		round.SecretWritten(ctx, s)
		return nil
	}
	created, err := k.ownedSecret(vc, name, typ, data)
	if err != nil {
		return err
	}
	*s = *created
	round.SecretWriting(ctx, client.ObjectKeyFromObject(s))
	if err := k.Client.Create(ctx, s); err != nil {
		return fmt.Errorf("create Secret %s: %w", name, err)
	}
	round.SecretWritten(ctx, s)
	return nil
}
