package workloadcontroller

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// podSecurity is the pod's security context: the default (non-root as opts.RunAsUser, which
// also owns /data, and the RuntimeDefault seccomp profile) with the node's
// podSecurityContext laid over it field by field.
func podSecurity(node *valkeyv1.ValkeyNode, opts Options) *corev1.PodSecurityContext {
	return overlay(&corev1.PodSecurityContext{
		RunAsNonRoot:        ptr.To(true),
		RunAsUser:           ptr.To(opts.RunAsUser),
		RunAsGroup:          ptr.To(opts.RunAsUser),
		FSGroup:             ptr.To(opts.RunAsUser),
		FSGroupChangePolicy: ptr.To(corev1.FSGroupChangeOnRootMismatch),
		SeccompProfile:      &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}, node.Spec.PodSecurityContext)
}

// containerSecurity is the security context of every container of the pod: the restricted
// default with the node's containerSecurityContext laid over it field by field.
func containerSecurity(node *valkeyv1.ValkeyNode) *corev1.SecurityContext {
	return overlay(&corev1.SecurityContext{
		RunAsNonRoot:             ptr.To(true),
		ReadOnlyRootFilesystem:   ptr.To(true),
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}, node.Spec.ContainerSecurityContext)
}

// overlay returns base with every top-level field that over sets replaced by over's (a
// nested field such as seccompProfile is replaced whole). Fields over leaves out keep
// base's value.
func overlay[T any](base, over *T) *T {
	if over == nil {
		return base
	}
	fields := map[string]json.RawMessage{}
	mustJSON(json.Unmarshal(mustMarshal(base), &fields))
	mustJSON(json.Unmarshal(mustMarshal(over), &fields)) // keys over sets replace base's
	out := new(T)
	mustJSON(json.Unmarshal(mustMarshal(fields), out))
	return out
}

func mustMarshal(v any) []byte {
	b, err := json.Marshal(v)
	mustJSON(err)
	return b
}

// mustJSON panics on an error that typed API structs never cause.
func mustJSON(err error) {
	if err != nil {
		panic(fmt.Sprintf("security context as JSON: %v", err))
	}
}
