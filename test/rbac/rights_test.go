package rbac_test

import (
	"context"
	"slices"

	. "github.com/onsi/ginkgo/v2"
)

const (
	topologySA = "valkey-topology-controller"
	volumeSA   = "valkey-volume-controller"
	workloadSA = "valkey-workload-controller"
)

// Questions every controller must be denied, in either install: no Lease outside the
// operator's namespace, and no Secret listed or watched anywhere.
func deniedToAll(own string) []access {
	return []access{
		{"update", "leases.coordination.k8s.io", "kube-system"},
		{"create", "leases.coordination.k8s.io", "kube-system"},
		{"get", "leases.coordination.k8s.io", "apps"},
		{"list", "leases.coordination.k8s.io", ""},
		{"list", "secrets", ""},
		{"watch", "secrets", ""},
		{"list", "secrets", own},
		{"list", "secrets", "apps"},
		{"update", "secrets", "apps"},
		{"delete", "secrets", "apps"},
	}
}

// except is list without the accesses of drop.
func except(list []access, drop ...access) []access {
	var out []access
	for _, a := range list {
		if !slices.Contains(drop, a) {
			out = append(out, a)
		}
	}
	return out
}

// leaderElection is what every controller needs in the operator's namespace.
func leaderElection(own string) []access {
	return []access{
		{"get", "leases.coordination.k8s.io", own},
		{"create", "leases.coordination.k8s.io", own},
		{"update", "leases.coordination.k8s.io", own},
	}
}

// partitions is what the topology controller's partition Leases need besides: listing and
// watching them, and deleting the member Leases of replicas gone.
func partitions(own string) []access {
	return []access{
		{"list", "leases.coordination.k8s.io", own},
		{"watch", "leases.coordination.k8s.io", own},
		{"delete", "leases.coordination.k8s.io", own},
	}
}

var _ = Describe("deploy/default", Ordered, func() {
	const ns = "valkey-system"
	BeforeAll(func(ctx context.Context) { install(ctx, "default", ns) })

	It("lets the topology controller get, create and update Secrets (renewed certificates, the ACL Secret), never list, watch or delete them, make Services but not delete them, and hold its Lease only in its namespace", func(ctx context.Context) {
		expectRights(ctx, ns, topologySA,
			append(append(leaderElection(ns), partitions(ns)...),
				access{"get", "secrets", "apps"},
				access{"create", "secrets", "apps"},
				access{"update", "secrets", "apps"},
				access{"create", "services", "apps"},
				access{"patch", "services", "apps"},
				access{"create", "events.events.k8s.io", "apps"},
				access{"list", "valkeyclusters.valkey.io", ""},
				access{"patch", "valkeynodes.valkey.io/status", "apps"},
			),
			append(except(deniedToAll(ns), access{"update", "secrets", "apps"}), access{"delete", "services", "apps"}))
	})

	It("gives the volume controller no Secret right and no Lease outside its namespace, and lets it create VolumeSnapshots but never change or delete them", func(ctx context.Context) {
		expectRights(ctx, ns, volumeSA,
			append(leaderElection(ns),
				access{"create", "persistentvolumeclaims", "apps"},
				access{"list", "storageclasses.storage.k8s.io", ""},
				access{"create", "volumesnapshots.snapshot.storage.k8s.io", "apps"},
				access{"watch", "volumesnapshots.snapshot.storage.k8s.io", ""},
				access{"list", "volumesnapshotclasses.snapshot.storage.k8s.io", ""},
			),
			append(deniedToAll(ns), access{"get", "secrets", "apps"},
				access{"delete", "volumesnapshots.snapshot.storage.k8s.io", "apps"},
				access{"patch", "volumesnapshots.snapshot.storage.k8s.io", "apps"},
				access{"update", "volumesnapshots.snapshot.storage.k8s.io", "apps"},
				access{"create", "volumesnapshotcontents.snapshot.storage.k8s.io", ""},
				access{"create", "volumesnapshotclasses.snapshot.storage.k8s.io", ""}))
	})

	It("gives the workload controller no Secret right and no Lease outside its namespace", func(ctx context.Context) {
		expectRights(ctx, ns, workloadSA,
			append(leaderElection(ns),
				access{"create", "statefulsets.apps", "apps"},
				access{"create", "configmaps", "apps"},
			),
			append(deniedToAll(ns), access{"get", "secrets", "apps"}, access{"get", "secrets", ns}))
	})
})

var _ = Describe("deploy/namespaced", Ordered, func() {
	const ns = "team-a"
	BeforeAll(func(ctx context.Context) { install(ctx, "namespaced", ns) })

	It("grants each controller its rights in its own namespace and nothing cluster-wide", func(ctx context.Context) {
		for _, sa := range []string{topologySA, volumeSA, workloadSA} {
			expectRights(ctx, ns, sa, leaderElection(ns), append(deniedToAll(ns),
				access{"list", "valkeynodes.valkey.io", ""},
				access{"list", "valkeynodes.valkey.io", "apps"},
				access{"watch", "valkeynodes.valkey.io", "valkey-system"},
				access{"list", "storageclasses.storage.k8s.io", ""},
				access{"get", "storageclasses.storage.k8s.io", ""},
			))
		}
		expectRights(ctx, ns, topologySA, []access{
			{"get", "secrets", ns}, {"create", "secrets", ns}, {"update", "secrets", ns},
			{"create", "services", ns}, {"list", "valkeyclusters.valkey.io", ns},
		}, nil)
		expectRights(ctx, ns, volumeSA, []access{
			{"create", "persistentvolumeclaims", ns}, {"list", "valkeynodes.valkey.io", ns},
			{"create", "volumesnapshots.snapshot.storage.k8s.io", ns},
		}, []access{{"get", "secrets", ns}, {"list", "volumesnapshotclasses.snapshot.storage.k8s.io", ""},
			{"delete", "volumesnapshots.snapshot.storage.k8s.io", ns}})
		expectRights(ctx, ns, workloadSA, []access{
			{"create", "statefulsets.apps", ns}, {"list", "pods", ns},
		}, []access{{"get", "secrets", ns}})
	})
})
