package partition

import (
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// A replica holding an expired partition Lease is gone, even while its member Lease and its
// other partitions, renewed in later rounds, have not expired yet: the others' share grows
// at once, so they take each of its partitions a lease duration after its last renewal.
func TestReplicaWithEveryPartitionExpiredIsNotAlive(t *testing.T) {
	s := testSet(t)
	lease := func(name, role, holder string) *coordinationv1.Lease {
		return &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "1", Labels: map[string]string{LabelRole: role},
				Annotations: map[string]string{AnnotationPartitions: "2"}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder)},
		}
	}
	leases := map[string]*coordinationv1.Lease{
		"n-p00":     lease("n-p00", RolePartition, "dead"),
		"n-p02":     lease("n-p02", RolePartition, "dead"),
		"n-m-dead":  lease("n-m-dead", RoleMember, "dead"),
		"n-p01":     lease("n-p01", RolePartition, "other"),
		"n-m-other": lease("n-m-other", RoleMember, "other"),
	}
	start := time.Now()
	s.observe(leases, start)
	if live := s.liveMembers(leases, start); live != 3 {
		t.Fatalf("live replicas %d, want 3 (me, dead, other) while every Lease is fresh", live)
	}
	// The dead replica's first partition has expired; its member Lease and its other
	// partition were renewed later, as were the other replica's Leases.
	later := start.Add(s.cfg.LeaseDuration)
	for _, name := range []string{"n-m-dead", "n-p02", "n-p01", "n-m-other"} {
		leases[name].ResourceVersion = "2"
	}
	s.observe(leases, later.Add(-time.Second))
	if live := s.liveMembers(leases, later); live != 2 {
		t.Errorf("live replicas %d, want 2: dead holds an expired partition", live)
	}
}
