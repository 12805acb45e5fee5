package access

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// writeACLSecret writes the cluster's ACL Secret <cluster>-acl (key users.acl, owned by the
// cluster) when its content differs from body. Pods mount it: a server starts with its
// users, and the kubelet brings an updated file to running pods (the running servers get
// the users live, see applyUsers).
func (k *Keeper) writeACLSecret(ctx context.Context, vc *valkeyv1.ValkeyCluster, p *UserPlan, body string) error {
	exists := p.aclSecret != nil
	if exists && string(p.aclSecret.Data[valkeyv1.ACLFileKey]) == body {
		return nil
	}
	s := &corev1.Secret{}
	if exists {
		s = p.aclSecret.DeepCopy()
	}
	data := map[string][]byte{valkeyv1.ACLFileKey: []byte(body)}
	if err := k.WriteSecret(ctx, vc, s, exists, valkeyv1.ACLSecretName(vc.Name), corev1.SecretTypeOpaque, data); err != nil {
		return err
	}
	p.aclSecret = s
	return nil
}
