package backup

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// volumeFailure is a shard's save refused before it is tried, or stopped, because the node
// chosen reports VolumeHealthy=False: a full volume or a server that cannot persist makes
// its BGSAVE fail, so the backup fails at once (BackupVolumeUnhealthy) rather than waiting
// for it.
type volumeFailure struct {
	node string
	cond metav1.Condition // the node's VolumeHealthy
}

func (e *volumeFailure) Error() string {
	return fmt.Sprintf("node %s reports VolumeHealthy=False (%s): %s; its BGSAVE cannot succeed. "+
		"Raise spec.persistence.size, enable persistence.autoGrow or raise its maxSize, or free space, then take the backup again",
		e.node, e.cond.Reason, e.cond.Message)
}
