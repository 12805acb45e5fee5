package partition

import (
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func countedLease(name, role, holder, count string) *coordinationv1.Lease {
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "1", Labels: map[string]string{LabelRole: role}},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder)},
	}
	if count != "" {
		l.Annotations = map[string]string{AnnotationPartitions: count}
	}
	return l
}

// A replica holding nothing takes a partition only once its own member Lease is listed and
// no live Lease of another partition count (or of none recorded) is seen.
func TestAReplicaWaitsForEveryReplicaOfAnotherCount(t *testing.T) {
	s := testSet(t) // 2 partitions, identity "me"
	now := time.Now()
	leases := map[string]*coordinationv1.Lease{}
	if why := s.otherCount(leases, now); why != memberNotListed {
		t.Fatalf("without its member Lease listed: %q, want %q", why, memberNotListed)
	}
	leases["n-m-me"] = countedLease("n-m-me", RoleMember, "me", "2")
	leases["n-m-same"] = countedLease("n-m-same", RoleMember, "same", "2")
	leases["n-p00"] = countedLease("n-p00", RolePartition, "same", "2")
	leases["n-p01"] = countedLease("n-p01", RolePartition, "", "4")
	s.observe(leases, now)
	if why := s.otherCount(leases, now); why != "" {
		t.Fatalf("replicas of its own count and a free Lease of another: %q, want none", why)
	}
	for _, tc := range []struct{ name, role, count, want string }{
		{"n-m-other", RoleMember, "4", "partitions=4"},
		{"n-p03", RolePartition, "4", "partitions=4"},
		{"n-m-old", RoleMember, "", "unrecorded"},
	} {
		l := countedLease(tc.name, tc.role, "other", tc.count)
		leases[tc.name] = l
		s.observe(leases, now)
		if why := s.otherCount(leases, now); !strings.Contains(why, tc.want) {
			t.Errorf("live %s of count %q: %q, want it to name %q", tc.name, tc.count, why, tc.want)
		}
		if why := s.otherCount(leases, now.Add(s.cfg.LeaseDuration)); why != "" {
			t.Errorf("%s expired: %q, want none", tc.name, why)
		}
		delete(leases, tc.name)
	}
	members := map[string]*coordinationv1.Lease{
		"n-m-same":  countedLease("n-m-same", RoleMember, "same", "2"),
		"n-m-other": countedLease("n-m-other", RoleMember, "other", "4"),
	}
	s.observe(members, now)
	if live := s.liveMembers(members, now); live != 2 {
		t.Errorf("live replicas %d, want 2: a replica of another count takes no share", live)
	}
}
