package partition

import (
	"context"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// holderOf is the Lease's holder ("" when free).
func holderOf(l *coordinationv1.Lease) string {
	return ptr.Deref(l.Spec.HolderIdentity, "")
}

// newLease is a Lease of the set held by this replica.
func (s *Set) newLease(name, role string) *coordinationv1.Lease {
	now := metav1.NewMicroTime(time.Now())
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: s.cfg.Namespace,
			Labels:      map[string]string{LabelSet: s.cfg.Name, LabelRole: role},
			Annotations: map[string]string{AnnotationPartitions: s.cfg.countValue()},
		},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(s.cfg.Identity),
			LeaseDurationSeconds: ptr.To(int32(s.cfg.LeaseDuration / time.Second)), //nolint:gosec // seconds of a lease
			AcquireTime:          &now,
			RenewTime:            &now,
		},
	}
}

// write updates l to holder ("" releases it). The update carries l's resourceVersion, so
// it fails when another replica wrote the Lease since it was read: two replicas never both
// succeed in taking one Lease. taken marks a change of holder.
func (s *Set) write(ctx context.Context, l *coordinationv1.Lease, holder string, taken bool) error {
	now := metav1.NewMicroTime(time.Now())
	l.Spec.HolderIdentity = ptr.To(holder)
	l.Spec.RenewTime = &now
	if l.Annotations == nil {
		l.Annotations = map[string]string{}
	}
	l.Annotations[AnnotationPartitions] = s.cfg.countValue()
	l.Spec.LeaseDurationSeconds = ptr.To(int32(s.cfg.LeaseDuration / time.Second)) //nolint:gosec // seconds of a lease
	if taken {
		l.Spec.AcquireTime = &now
		l.Spec.LeaseTransitions = ptr.To(ptr.Deref(l.Spec.LeaseTransitions, 0) + 1)
	}
	leaseWrites.Inc()
	return s.c.Update(ctx, l)
}

// dueForRenewal reports whether a Lease written at renewed is renewed in this round: at
// half the renew deadline, and early enough for two more tries before it.
func (s *Set) dueForRenewal(renewed time.Time) bool {
	due := min(s.cfg.RenewDeadline/2, s.cfg.RenewDeadline-2*s.cfg.RetryPeriod)
	return time.Since(renewed) >= due
}

// renewMember writes this replica's member Lease (creating it when missing), so that the
// others count it alive.
func (s *Set) renewMember(ctx context.Context, l *coordinationv1.Lease) {
	s.mu.Lock()
	last := s.memberRenewed
	s.mu.Unlock()
	var err error
	switch {
	case l == nil:
		leaseWrites.Inc()
		err = s.c.Create(ctx, s.newLease(s.cfg.memberName(), RoleMember))
	case holderOf(l) != s.cfg.Identity || s.dueForRenewal(last):
		err = s.write(ctx, l, s.cfg.Identity, false)
	default:
		return
	}
	if err != nil {
		s.log.V(1).Info("renew the member lease failed", "error", err.Error())
		return
	}
	s.mu.Lock()
	s.memberRenewed = time.Now()
	s.mu.Unlock()
}
