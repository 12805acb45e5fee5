package workloadcontroller

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// nodeMemo is what the controller keeps in memory per node between reconciles (safe for
// concurrent reconciles of different nodes); a node that is gone is dropped (Reconcile).
type nodeMemo[V any] struct {
	mu     sync.Mutex
	byNode map[types.NamespacedName]V
}

func (m *nodeMemo[V]) get(key types.NamespacedName) (V, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.byNode[key]
	return v, ok
}

func (m *nodeMemo[V]) put(key types.NamespacedName, v V) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byNode == nil {
		m.byNode = map[types.NamespacedName]V{}
	}
	m.byNode[key] = v
}

// take returns what is kept for key and forgets it.
func (m *nodeMemo[V]) take(key types.NamespacedName) (V, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.byNode[key]
	delete(m.byNode, key)
	return v, ok
}
