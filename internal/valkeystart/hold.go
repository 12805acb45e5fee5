package valkeystart

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// HoldsReplication tells whether a server starting on dataDir must start with the
// replication user switched off: it has no nodes.conf, so it starts with a new node ID and
// without the data its node may have had (an emptied or replaced volume, a lost nodes.conf,
// a node's first start). A replica still following the address of the node it replaces
// would otherwise ask it for a sync and be given its empty data set: every key the replica
// held would be gone (Valkey's own warning about primaries restarting without persistence).
// Refused at AUTH, such a replica keeps its data, and the topology controller switches the
// user on once no replica of the server's shard follows a node that is gone (see
// docs/contract.md, "A server back without its data").
func HoldsReplication(dataDir string) bool {
	_, err := os.Stat(filepath.Join(dataDir, NodesFile))
	return errors.Is(err, fs.ErrNotExist)
}
