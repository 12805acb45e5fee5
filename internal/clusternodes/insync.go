package clusternodes

import (
	"fmt"
	"strconv"
	"strings"
)

// InSyncReplica returns the replication offset of a replica (INFO replication) that completed a
// sync with its primary: no sync in progress, an offset past 1 (a server with neither a
// primary nor a cached primary reports 1, one whose sync never finished 0), and a link to
// its primary that was up (master_link_down_since_seconds is -1 until a link has been up
// and lost, as after a full sync aborted when its primary died; it is absent while the link
// is up). A replica that restarted and never reached its primary since fails too: then the
// crashed primary starts on its own data rather than on data of unknown age.
func InSyncReplica(info map[string]string) (int64, error) {
	offset, _ := strconv.ParseInt(info["slave_repl_offset"], 10, 64)
	down, hasDown := info["master_link_down_since_seconds"]
	switch {
	case info["role"] != "slave" || info["master_sync_in_progress"] != "0":
		return 0, fmt.Errorf("not an in-sync replica (role %s, sync in progress %s)", info["role"], info["master_sync_in_progress"])
	case offset <= 1:
		return 0, fmt.Errorf("not an in-sync replica: replication offset %d, it holds nothing of its primary", offset)
	case hasDown && strings.HasPrefix(down, "-"):
		return 0, fmt.Errorf("not an in-sync replica: its link to its primary was never up since it started (offset %d)", offset)
	}
	return offset, nil
}
