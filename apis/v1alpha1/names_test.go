package v1alpha1_test

import (
	"strings"
	"testing"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// The longest cluster name allowed makes every derived name fit its Kubernetes limit, and
// one character more makes the StatefulSet's revision-hash label too long.
func TestMaxClusterNameLengthFitsEveryDerivedName(t *testing.T) {
	const revisionHash = "-0123456789" // what the StatefulSet controller appends, at most
	for _, shards := range []int32{1, 3, 10, 11, 100, 1000} {
		for _, replicas := range []int32{0, 1, 9, 10} {
			name := strings.Repeat("c", valkeyv1.MaxClusterNameLength(shards, replicas))
			node := valkeyv1.NodeName(name, shards-1, replicas)
			sts := valkeyv1.WorkloadName(node)
			for what, got := range map[string]int{
				"StatefulSet revision label": len(sts + revisionHash),
				"valkey.io/node label":       len(node),
				"valkey.io/cluster label":    len(name),
				"pod name":                   len(sts + "-0"),
			} {
				if got > valkeyv1.MaxLabelValueLength {
					t.Errorf("%d shards, %d replicas: %s is %d characters", shards, replicas, what, got)
				}
			}
			for what, got := range map[string]int{
				"claim": len(valkeyv1.ClaimName(node)), "ConfigMap": len(valkeyv1.ConfigMapName(node)),
				"Secret": len(valkeyv1.PasswordSecretName(name)),
			} {
				if got > 253 {
					t.Errorf("%d shards, %d replicas: %s name is %d characters", shards, replicas, what, got)
				}
			}
			if over := valkeyv1.WorkloadName(valkeyv1.NodeName(name+"c", shards-1, replicas)) + revisionHash; len(over) <= valkeyv1.MaxLabelValueLength {
				t.Errorf("%d shards, %d replicas: a name one longer still fits (%d)", shards, replicas, len(over))
			}
		}
	}
}
