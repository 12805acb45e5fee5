package topologycontroller

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/partition"
	"valkey.io/operator/internal/status"
)

// clusterCollector reports what each ValkeyCluster this replica owns is, read from the
// controller's cache at each scrape: it keeps nothing between scrapes, so a cluster deleted
// or handed to another replica leaves no series behind, and no two replicas report the same
// cluster.
type clusterCollector struct {
	mu  sync.RWMutex
	src *collectorSource
}

// collectorSource is where the collector reads: the manager set up last.
type collectorSource struct {
	reader client.Reader
	// owns tells whether this replica acts on a cluster (its namespace/name) now; nil: on
	// every cluster once elected (sharding off).
	owns func(key string) bool
	// held is how many partitions this replica holds; nil with sharding off.
	held    func() int
	elected <-chan struct{}
}

// list reads the cache without copying it: a scrape only reads, and a copy of every cluster
// and node per scrape was as large as the cache itself.
func (src *collectorSource) list(ctx context.Context, list client.ObjectList) error {
	return src.reader.List(ctx, list, client.UnsafeDisableDeepCopy)
}

// collector is the one registered with the metrics registry; SetupWithManager points it at
// its manager.
var collector = &clusterCollector{}

func (c *clusterCollector) set(src *collectorSource) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.src = src
}

func (c *clusterCollector) source() *collectorSource {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.src
}

func clusterDesc(name, help string, extra ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, append(append([]string{}, clusterLabels...), extra...), nil)
}

var (
	descReady        = clusterDesc("valkey_cluster_ready", "1 while the ValkeyCluster's Ready condition is True, else 0.")
	descDegraded     = clusterDesc("valkey_cluster_degraded", "1 while the ValkeyCluster's Degraded condition is True (a node lost, a shard without its replicas, a volume unhealthy), else 0.")
	descPaused       = clusterDesc("valkey_cluster_paused", "1 while the cluster or one of its nodes is paused (valkey.io/paused), else 0.")
	descShards       = clusterDesc("valkey_cluster_shards", "Shards of the cluster (status.shards).")
	descShardsReady  = clusterDesc("valkey_cluster_shards_ready", "Shards whose primary and every replica are ready and joined (status.readyShards).")
	descNodes        = clusterDesc("valkey_cluster_nodes", "ValkeyNodes of the cluster (status.nodes).")
	descNodesReady   = clusterDesc("valkey_cluster_nodes_ready", "Nodes ready and joined (status.readyNodes).")
	descSlots        = clusterDesc("valkey_cluster_slots_assigned", "Hash slots assigned to a primary, of 16384 (status.slotsAssigned).")
	descRollsPending = clusterDesc("valkey_cluster_rolls_pending", "Nodes whose pod waits for a restart the workload controller requested (RollPending=True).")
	descBackups      = clusterDesc("valkey_cluster_backups", "ValkeyBackups of the cluster, by phase.", "phase")
	descLastBackup   = clusterDesc("valkey_cluster_last_backup_completed_timestamp_seconds", "When the cluster's last completed ValkeyBackup completed (Unix time); absent before the first.")
	descCertExpiry   = clusterDesc("valkey_cluster_tls_certificate_expiry_timestamp_seconds", "When the certificate of the cluster's TLS Secret expires (Unix time), as the controller last read it; absent without spec.tls.")
	descHeld         = prometheus.NewDesc("valkey_topology_partitions_held", "Partitions of the ValkeyClusters this topology controller replica holds (absent with sharding off).", nil, nil)
)

// Describe sends every metric's description.
func (c *clusterCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descReady, descDegraded, descPaused, descShards, descShardsReady, descNodes,
		descNodesReady, descSlots, descRollsPending, descBackups, descLastBackup, descCertExpiry, descHeld} {
		ch <- d
	}
}

// Collect reads the owned clusters, their nodes and backups from the cache.
func (c *clusterCollector) Collect(ch chan<- prometheus.Metric) {
	src := c.source()
	if src == nil {
		return
	}
	select {
	case <-src.elected:
	default:
		return // a replica waiting to lead reports nothing
	}
	if src.held != nil {
		ch <- prometheus.MustNewConstMetric(descHeld, prometheus.GaugeValue, float64(src.held()))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var clusters valkeyv1.ValkeyClusterList
	var nodes valkeyv1.ValkeyNodeList
	var backups valkeyv1.ValkeyBackupList
	if src.list(ctx, &clusters) != nil || src.list(ctx, &nodes) != nil || src.list(ctx, &backups) != nil {
		return // the cache is not synced yet: no figures rather than wrong ones
	}
	// Nodes and backups by their cluster's key, once per scrape, not once per cluster.
	pending := map[string]int{}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if n.Spec.ClusterName != "" && status.IsTrue(n.Status.Conditions, valkeyv1.ConditionRollPending) {
			pending[nodeKey(n)]++
		}
	}
	backupsOf := map[string][]*valkeyv1.ValkeyBackup{}
	for i := range backups.Items {
		b := &backups.Items[i]
		key := partition.ClusterKey(b.Namespace, b.Spec.ClusterName)
		backupsOf[key] = append(backupsOf[key], b)
	}
	exists := map[string]bool{}
	for i := range clusters.Items {
		vc := &clusters.Items[i]
		key := client.ObjectKeyFromObject(vc).String()
		exists[key] = true
		if src.owns == nil || src.owns(key) {
			collectCluster(ch, vc, pending[key], backupsOf[key])
		}
	}
	certExpiries.Range(func(k, _ any) bool {
		if !exists[k.(string)] {
			certExpiries.Delete(k)
		}
		return true
	})
}

// certExpiries are the expiry of each cluster's TLS certificate ("namespace/name" →
// time.Time), as the TLS phase last read its Secret.
var certExpiries sync.Map

// recordCertExpiry remembers when the certificate of vc's TLS Secret expires.
func recordCertExpiry(vc *valkeyv1.ValkeyCluster, notAfter time.Time) {
	certExpiries.Store(client.ObjectKeyFromObject(vc).String(), notAfter)
}

// collectCluster sends one cluster's gauges: rollsPending of its nodes wait for a restart,
// backups are its ValkeyBackups.
func collectCluster(ch chan<- prometheus.Metric, vc *valkeyv1.ValkeyCluster, rollsPending int, backups []*valkeyv1.ValkeyBackup) {
	labels := []string{vc.Namespace, vc.Name}
	gauge := func(d *prometheus.Desc, v float64, extra ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, append(labels, extra...)...)
	}
	s := vc.Status
	gauge(descReady, conditionTrue(s.Conditions, valkeyv1.ConditionReady))
	gauge(descDegraded, conditionTrue(s.Conditions, valkeyv1.ConditionDegraded))
	gauge(descPaused, conditionTrue(s.Conditions, valkeyv1.ConditionPaused))
	gauge(descShards, float64(s.Shards))
	gauge(descShardsReady, float64(s.ReadyShards))
	gauge(descNodes, float64(s.Nodes))
	gauge(descNodesReady, float64(s.ReadyNodes))
	gauge(descSlots, float64(s.SlotsAssigned))
	gauge(descRollsPending, float64(rollsPending))
	phases := map[valkeyv1.BackupPhase]int{valkeyv1.BackupPending: 0, valkeyv1.BackupSaving: 0,
		valkeyv1.BackupSnapshotting: 0, valkeyv1.BackupCompleted: 0, valkeyv1.BackupFailed: 0}
	var last *metav1.Time
	for _, b := range backups {
		phase := b.Status.Phase
		if phase == "" {
			phase = valkeyv1.BackupPending
		}
		phases[phase]++
		if phase == valkeyv1.BackupCompleted && b.Status.CompletedAt != nil && (last == nil || last.Before(b.Status.CompletedAt)) {
			last = b.Status.CompletedAt
		}
	}
	for phase, n := range phases {
		gauge(descBackups, float64(n), string(phase))
	}
	if last != nil {
		gauge(descLastBackup, float64(last.Unix()))
	}
	if t, ok := certExpiries.Load(client.ObjectKeyFromObject(vc).String()); ok && vc.Spec.TLS != nil {
		gauge(descCertExpiry, float64(t.(time.Time).Unix()))
	}
}

// conditionTrue is 1 when the condition is True, else 0.
func conditionTrue(conds []metav1.Condition, t string) float64 {
	if status.IsTrue(conds, t) {
		return 1
	}
	return 0
}
