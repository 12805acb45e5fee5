package workloadcontroller

import (
	corev1 "k8s.io/api/core/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// Credentials of a cluster node's pod. The controller mounts and references the Secrets by
// their conventional names; it never reads them.
const (
	operatorPasswordEnv = "VALKEY_OPERATOR_PASSWORD"
	aclVolume           = "acl"
	// ACLDir is where a cluster node's ACL Secret (<cluster>-acl) is mounted, without
	// subPath, so that an updated Secret reaches the file.
	ACLDir = "/etc/valkey-acl"
)

// usesOperatorUser: the node is a cluster's, so its server starts with the operator's own
// user and the cluster's users (the ACL Secret) instead of requirepass.
func usesOperatorUser(node *valkeyv1.ValkeyNode) bool { return node.Spec.ClusterName != "" }

// authEnv are the password variables of the Valkey container: valkey-start reads
// VALKEY_OPERATOR_PASSWORD (a cluster node) or VALKEY_PASSWORD (a node outside any
// cluster); the probes' CLI reads REDISCLI_AUTH/VALKEYCLI_AUTH.
func authEnv(node *valkeyv1.ValkeyNode) []corev1.EnvVar {
	ref := node.PasswordSecretRef()
	vars := []string{passwordEnv, "REDISCLI_AUTH", "VALKEYCLI_AUTH"}
	if usesOperatorUser(node) {
		ref = &valkeyv1.SecretKeyRef{Name: valkeyv1.OperatorSecretName(node.Spec.ClusterName), Key: valkeyv1.DefaultPasswordKey}
		vars[0] = operatorPasswordEnv
	}
	if ref == nil {
		return nil
	}
	env := make([]corev1.EnvVar, 0, len(vars))
	for _, name := range vars {
		env = append(env, corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: ref.Name},
				Key:                  ref.Key,
			},
		}})
	}
	return env
}

// authArgs are valkey-start's arguments for the server's credentials.
func authArgs(node *valkeyv1.ValkeyNode) []string {
	switch {
	case usesOperatorUser(node):
		return []string{"--auth-file", AuthFile, "--user", valkeyv1.OperatorUser,
			"--password-env", operatorPasswordEnv, "--acl-file", ACLDir + "/" + valkeyv1.ACLFileKey}
	case node.PasswordSecretRef() != nil:
		return []string{"--auth-file", AuthFile}
	}
	return nil
}

// probeUser are the probe CLI's arguments naming the user it authenticates as.
func probeUser(node *valkeyv1.ValkeyNode) []string {
	if usesOperatorUser(node) {
		return []string{"--user", valkeyv1.OperatorUser}
	}
	return nil
}

// withACL adds a cluster node's ACL Secret volume and its read-only mount.
func withACL(node *valkeyv1.ValkeyNode, spec *corev1.PodSpec) {
	if !usesOperatorUser(node) {
		return
	}
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: aclVolume, VolumeSource: corev1.VolumeSource{
		Secret: &corev1.SecretVolumeSource{SecretName: valkeyv1.ACLSecretName(node.Spec.ClusterName)},
	}})
	c := &spec.Containers[0]
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: aclVolume, MountPath: ACLDir, ReadOnly: true})
}
