package topologycontroller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// writeACLSecret writes the cluster's ACL Secret <cluster>-acl (key users.acl, owned by the
// cluster) when its content differs from body. Pods mount it: a server starts with its
// users, and the kubelet brings an updated file to running pods (the running servers get
// the users live, see applyUsers).
func (r *Reconciler) writeACLSecret(ctx context.Context, vc *valkeyv1.ValkeyCluster, p *userPlan, body string) error {
	if p.aclSecret != nil {
		if string(p.aclSecret.Data[valkeyv1.ACLFileKey]) == body {
			return nil
		}
		s := p.aclSecret.DeepCopy()
		s.Data = map[string][]byte{valkeyv1.ACLFileKey: []byte(body)}
		if err := r.Update(ctx, s); err != nil {
			return fmt.Errorf("update Secret %s: %w", s.Name, err)
		}
		p.aclSecret = s
		return nil
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: valkeyv1.ACLSecretName(vc.Name), Namespace: vc.Namespace,
			Labels: map[string]string{
				valkeyv1.LabelCluster:   vc.Name,
				valkeyv1.LabelManagedBy: valkeyv1.ManagedByValue,
				valkeyv1.LabelName:      valkeyv1.NameValue,
			},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{valkeyv1.ACLFileKey: []byte(body)},
	}
	if err := controllerutil.SetControllerReference(vc, s, r.Scheme()); err != nil {
		return err
	}
	if err := r.Create(ctx, s); err != nil {
		return fmt.Errorf("create Secret %s: %w", s.Name, err)
	}
	p.aclSecret = s
	return nil
}
