package workloadcontroller

import (
	"strings"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// restoreArgs are valkey-start's flags for a node restored from a backup (spec.restore): the
// restore id (the backup's name), so the data directory is prepared once, and whether the
// node keeps its node ID. Nothing comes from spec.restore.snapshotName: the topology
// controller drops it once the cluster is restored, and that must not roll the pod.
func restoreArgs(node *valkeyv1.ValkeyNode) []string {
	r := node.Spec.Restore
	if r == nil {
		return nil
	}
	return []string{"--restore-id", r.Backup, "--restore-identity", strings.ToLower(string(r.Identity))}
}
