package backup

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// saveStage is where one shard's save is.
type saveStage int

const (
	// stageCatchUp: waiting for the chosen replica to reach the primary's offset at T.
	stageCatchUp saveStage = iota
	// stageBGSave: BGSAVE is to be sent (once no other save runs).
	stageBGSave
	// stageSaving: waiting for the BGSAVE sent to finish.
	stageSaving
	// stageRewrite: BGREWRITEAOF is to be sent (AOF on).
	stageRewrite
	// stageRewriting: waiting for the rewrite to finish.
	stageRewriting
	// stageSaved: the shard's point is saved.
	stageSaved
)

// shardSave is one shard's save in flight: the node chosen, the saved point (T and the
// primary's offset then) and the counters read before the node's BGSAVE or rewrite.
type shardSave struct {
	node     string // the ValkeyNode saved
	primary  string // its shard's primary
	at       time.Time
	offset   int64
	deadline time.Time // of the replica's catch-up
	stage    saveStage
	// saves and lastSave are rdb_saves and rdb_last_save_time before BGSAVE; rewrites is
	// aof_rewrites before BGREWRITEAOF.
	saves, lastSave, rewrites int64
}

// saveBook holds the saves in flight of each backup, by backup UID and shard. A restarted
// controller has none: the shards not recorded in the backup's status are saved again.
type saveBook struct {
	mu   sync.Mutex
	runs map[types.UID]*backupRun
}

type backupRun struct {
	cluster types.UID
	shards  map[int32]*shardSave
}

func newSaveBook() *saveBook { return &saveBook{runs: map[types.UID]*backupRun{}} }

// shard returns the save in flight of a backup's shard (nil when none).
func (sb *saveBook) shard(backup types.UID, shard int32) *shardSave {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if r := sb.runs[backup]; r != nil {
		return r.shards[shard]
	}
	return nil
}

// set records (or, with nil, drops) the save in flight of a backup's shard.
func (sb *saveBook) set(cluster, backup types.UID, shard int32, s *shardSave) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	r := sb.runs[backup]
	if r == nil {
		r = &backupRun{cluster: cluster, shards: map[int32]*shardSave{}}
		sb.runs[backup] = r
	}
	if s == nil {
		delete(r.shards, shard)
		return
	}
	r.shards[shard] = s
}

// keepOnly forgets the saves of the cluster's backups that are finished or gone.
func (sb *saveBook) keepOnly(cluster types.UID, list []*valkeyv1.ValkeyBackup) {
	keep := backupUIDs(list)
	sb.mu.Lock()
	defer sb.mu.Unlock()
	for uid, r := range sb.runs {
		if r.cluster == cluster && !keep[uid] {
			delete(sb.runs, uid)
		}
	}
}
