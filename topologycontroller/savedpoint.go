package topologycontroller

import (
	"fmt"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// withSavedPoint adds sp to a node's topology share (BackupPointSaved and
// status.topology.savedPoint), or removes any saved point when sp is nil.
func withSavedPoint(share status.TopologyShare, sp *valkeyv1.SavedPoint) status.TopologyShare {
	topo := share.Topology
	switch {
	case sp != nil && topo == nil:
		topo = &valkeyv1.TopologyStatus{}
	case sp == nil && (topo == nil || topo.SavedPoint == nil):
		return share
	default:
		topo = topo.DeepCopy()
	}
	topo.SavedPoint = sp
	share.Topology = topo
	if sp != nil {
		share.Conditions = append(share.Conditions, status.Condition(valkeyv1.ConditionBackupPointSaved, true, valkeyv1.ReasonSaved,
			fmt.Sprintf("BGSAVE finished at offset %d: the backup %s may snapshot this node's claim", sp.Offset, sp.Backup)))
	}
	return share
}
