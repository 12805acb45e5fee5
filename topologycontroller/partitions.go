package topologycontroller

import (
	"context"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/partition"
	"valkey.io/operator/internal/requests"
)

// PartitionOptions shard the ValkeyClusters among several active replicas (see
// internal/partition and docs/contract.md, "Partitions"). Partitions 0 turns sharding off:
// one replica reconciles every cluster (the binary then elects a leader).
type PartitionOptions struct {
	// Partitions is the number of partitions, one Lease each; 0 turns sharding off.
	Partitions int `mapstructure:"partitions"`
	// PartitionNamespace holds the Leases (the controller's own namespace).
	PartitionNamespace string `mapstructure:"partition-namespace"`
	// Identity names this replica among the others (its pod's name).
	Identity string `mapstructure:"identity"`
	// PartitionLeaseDuration, PartitionRenewDeadline and PartitionRetryPeriod time the
	// Leases: a replica gone hands its clusters over a lease duration after its last renewal
	// (the others watch the Leases and wake at their expiry), and acts on a partition for at
	// most the renew deadline after its last renewal.
	PartitionLeaseDuration time.Duration `mapstructure:"partition-lease-duration"`
	PartitionRenewDeadline time.Duration `mapstructure:"partition-renew-deadline"`
	PartitionRetryPeriod   time.Duration `mapstructure:"partition-retry-period"`
	// PartitionKeepOnStop leaves the Leases held when the controller stops, as a crash does
	// (tests); by default they are released once the reconciles in flight have returned.
	PartitionKeepOnStop bool `mapstructure:"-"`
}

// partitionConfig is the partition set's configuration.
func (o Options) partitionConfig() partition.Config {
	return partition.Config{
		Name:          Name,
		Namespace:     o.PartitionNamespace,
		Identity:      o.Identity,
		Partitions:    o.Partitions,
		LeaseDuration: o.PartitionLeaseDuration,
		RenewDeadline: o.PartitionRenewDeadline,
		RetryPeriod:   o.PartitionRetryPeriod,
		KeepOnStop:    o.PartitionKeepOnStop,
	}
}

// partitioned is the controllers' sharding: the partition set and the keys of their
// requests. A nil *partitioned (sharding off) passes every request.
type partitioned struct {
	set *partition.Set
	c   client.Client
}

// newPartitioned starts the partition loop with mgr when sharding is on.
func newPartitioned(mgr ctrl.Manager, opts Options) (*partitioned, error) {
	if opts.Partitions == 0 {
		return nil, nil
	}
	c, err := client.NewWithWatch(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return nil, err
	}
	set, err := partition.New(opts.partitionConfig(), c, mgr.GetLogger().WithName("partitions"))
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(set); err != nil {
		return nil, err
	}
	return &partitioned{set: set, c: mgr.GetClient()}, nil
}

// collectorSource is what the metrics collector reads, for mgr: with sharding, only the
// clusters of the partitions held.
func (s *partitioned) collectorSource(mgr ctrl.Manager) *collectorSource {
	src := &collectorSource{reader: mgr.GetClient(), elected: mgr.Elected()}
	if s != nil {
		src.owns = s.set.Holds
		src.held = func() int { return len(s.set.Held()) }
	}
	return src
}

// guardClusters runs r for the ValkeyClusters of the partitions held.
func (s *partitioned) guardClusters(r reconcile.Reconciler) reconcile.Reconciler {
	if s == nil {
		return r
	}
	return s.set.Guard(r, func(_ context.Context, req reconcile.Request) (string, error) {
		return req.String(), nil
	})
}

// guardNodes runs r for the ValkeyNodes whose cluster is in a partition held (a node
// outside any cluster by its own name).
func (s *partitioned) guardNodes(r reconcile.Reconciler) reconcile.Reconciler {
	if s == nil {
		return r
	}
	return s.set.Guard(r, func(ctx context.Context, req reconcile.Request) (string, error) {
		var n valkeyv1.ValkeyNode
		if err := s.c.Get(ctx, req.NamespacedName, &n); err != nil {
			return "", client.IgnoreNotFound(err)
		}
		return nodeKey(&n), nil
	})
}

// nodeKey is the partition key of a node: its cluster's namespace/name.
func nodeKey(n *valkeyv1.ValkeyNode) string {
	if n.Spec.ClusterName == "" {
		return client.ObjectKeyFromObject(n).String()
	}
	return partition.ClusterKey(n.Namespace, n.Spec.ClusterName)
}

// clustersOf lists the ValkeyClusters of partition p (enqueued when it is gained).
func (s *partitioned) clustersOf(ctx context.Context, p int) []reconcile.Request {
	return requests.Of(ctx, s.c, &valkeyv1.ValkeyClusterList{}, func(o client.Object) bool {
		return s.set.Of(client.ObjectKeyFromObject(o).String()) == p
	}, "the ValkeyClusters of a partition gained")
}

// nodesOf lists the ValkeyNodes being deleted in partition p: the outside-cluster
// reconciler may owe them Drained.
func (s *partitioned) nodesOf(ctx context.Context, p int) []reconcile.Request {
	return requests.Of(ctx, s.c, &valkeyv1.ValkeyNodeList{}, func(o client.Object) bool {
		return !o.GetDeletionTimestamp().IsZero() && s.set.Of(nodeKey(o.(*valkeyv1.ValkeyNode))) == p
	}, "the ValkeyNodes of a partition gained")
}
