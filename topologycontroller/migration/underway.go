package migration

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// underwayBook remembers the clusters whose slots this process moved and that were not
// found balanced since, so that the end of a migration is reported (Migrated, the
// valkey_cluster_migrations_total completed count) even when the round that finds the slots
// balanced did not begin with the cluster's status saying MigratingSlots: a round in between
// that waited on Valkey to converge writes another Progressing reason. Kept in memory only:
// after a restart the status alone tells.
type underwayBook struct {
	mu       sync.Mutex
	clusters map[types.UID]bool
}

// moved records that slots of the cluster uid moved this round.
func (b *underwayBook) moved(uid types.UID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.clusters == nil {
		b.clusters = map[types.UID]bool{}
	}
	b.clusters[uid] = true
}

// balanced forgets the cluster uid and tells whether its slots had been moving.
func (b *underwayBook) balanced(uid types.UID) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	was := b.clusters[uid]
	delete(b.clusters, uid)
	return was
}
