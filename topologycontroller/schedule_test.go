package topologycontroller_test

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

func newSchedule(ns, name, cluster, schedule string, retention int32) {
	s := &valkeyv1.ValkeyBackupSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: valkeyv1.ValkeyBackupScheduleSpec{ClusterName: cluster, Schedule: schedule, Retention: retention, VolumeSnapshotClassName: ptr.To("fast")}}
	ExpectWithOffset(1, k8s.Create(context.Background(), s)).To(Succeed())
}

func getSchedule(ns, name string) *valkeyv1.ValkeyBackupSchedule {
	var s valkeyv1.ValkeyBackupSchedule
	ExpectWithOffset(1, k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &s)).To(Succeed())
	return &s
}

func scheduleState(ns, name string) func() string {
	return func() string {
		c := status.Get(getSchedule(ns, name).Status.Conditions, valkeyv1.ConditionReady)
		if c == nil {
			return ""
		}
		return string(c.Status) + "/" + c.Reason
	}
}

// backupNames are the names of the ValkeyBackups of ns.
func backupNames(ns string) []string {
	var list valkeyv1.ValkeyBackupList
	ExpectWithOffset(1, k8s.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
	var out []string
	for _, b := range list.Items {
		out = append(out, b.Name)
	}
	return out
}

// scheduledBackup creates a backup as schedule s made it, in the given final phase ("" for
// none: it stays in progress).
func scheduledBackup(ns, s string, minute int, phase valkeyv1.BackupPhase) string {
	name := fmt.Sprintf("%s-%d", s, 29000000+minute)
	b := &valkeyv1.ValkeyBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{valkeyv1.LabelBackupSchedule: s}},
		Spec: valkeyv1.ValkeyBackupSpec{ClusterName: "gone"}}
	ExpectWithOffset(1, k8s.Create(context.Background(), b)).To(Succeed())
	if phase != "" {
		// The controller reports the backup (its cluster is missing) meanwhile: read again.
		EventuallyWithOffset(1, func() error {
			got := getBackup(ns, name)
			got.Status.Phase = phase
			return k8s.Status().Update(context.Background(), got)
		}, 10*time.Second).Should(Succeed())
	}
	return name
}

var _ = Describe("Backup schedules", func() {

	It("reports a schedule that does not parse", func() {
		ns := newNamespace()
		newSchedule(ns, "bad", "c", "61 * * * *", 2)
		Eventually(scheduleState(ns, "bad"), 20*time.Second).Should(Equal("False/InvalidSchedule"))
		Expect(status.Get(getSchedule(ns, "bad").Status.Conditions, valkeyv1.ConditionReady).Message).To(ContainSubstring("61"))
		Eventually(func() int { return eventsWithReason(ns, valkeyv1.ReasonInvalidSchedule) }, 10*time.Second).Should(Equal(1))
		Consistently(func() []string { return backupNames(ns) }, 2*time.Second).Should(BeEmpty())
	})

	It("creates the backup of the current minute, labelled and with the schedule's class", func() {
		ns := newNamespace()
		newCluster(ns, "c", 1, 0)
		newSchedule(ns, "every", "c", "* * * * *", 3)
		Eventually(func() string { return getSchedule(ns, "every").Status.LastBackup }, 20*time.Second).ShouldNot(BeEmpty())
		s := getSchedule(ns, "every")
		created := s.CreationTimestamp.Time.UTC().Truncate(time.Minute)
		Expect(s.Status.LastBackup).To(BeElementOf(valkeyv1.ScheduledBackupName("every", created), valkeyv1.ScheduledBackupName("every", created.Add(time.Minute))))
		Expect(scheduleState(ns, "every")()).To(Equal("True/Scheduled"))
		b := getBackup(ns, s.Status.LastBackup)
		Expect(b.Labels).To(HaveKeyWithValue(valkeyv1.LabelBackupSchedule, "every"))
		Expect(b.OwnerReferences).To(BeEmpty(), "deleting the schedule keeps its backups")
		Expect(b.Spec.ClusterName).To(Equal("c"))
		Expect(b.Spec.VolumeSnapshotClassName).To(Equal(ptr.To("fast")))
		Expect(s.Status.LastScheduleTime.Time.Unix() / 60).To(BeNumerically("==", created.Unix()/60, 1))
		// One event per backup created: a minute that begins meanwhile creates the next one.
		Eventually(func() int { return eventsWithReason(ns, valkeyv1.EventBackupCreated) - len(backupNames(ns)) }, 10*time.Second).Should(BeZero())
		Expect(eventsWithReason(ns, valkeyv1.EventBackupCreated)).To(BeNumerically(">=", 1))
	})

	It("keeps the newest completed backups, deletes older completed and failed ones, never one in progress", func() {
		ns := newNamespace()
		oldFailed := scheduledBackup(ns, "keep", 1, valkeyv1.BackupFailed)
		inProgress := scheduledBackup(ns, "keep", 2, "")
		c1 := scheduledBackup(ns, "keep", 3, valkeyv1.BackupCompleted)
		c2 := scheduledBackup(ns, "keep", 4, valkeyv1.BackupCompleted)
		c3 := scheduledBackup(ns, "keep", 5, valkeyv1.BackupCompleted)
		c4 := scheduledBackup(ns, "keep", 6, valkeyv1.BackupCompleted)
		newFailed := scheduledBackup(ns, "keep", 7, valkeyv1.BackupFailed)
		other := scheduledBackup(ns, "other", 1, valkeyv1.BackupCompleted)
		_, _ = c1, c2
		newSchedule(ns, "keep", "gone", "0 0 1 1 *", 2)
		Eventually(func() []string { return backupNames(ns) }, 20*time.Second).Should(ConsistOf(inProgress, c3, c4, newFailed, other))
		Eventually(func() int { return eventCount(ns, valkeyv1.EventBackupPruned) }, 10*time.Second).Should(Equal(3))
		Expect(backupNames(ns)).NotTo(ContainElement(oldFailed))
		Expect(scheduleState(ns, "keep")()).To(Equal("False/ClusterNotFound"))
	})

	It("lets scheduled times pass without a backup while its cluster does not exist, and is Ready once it does", func() {
		ns := newNamespace()
		newSchedule(ns, "early", "later", "* * * * *", 2)
		Eventually(scheduleState(ns, "early"), 20*time.Second).Should(Equal("False/ClusterNotFound"))
		s := getSchedule(ns, "early")
		Expect(status.Get(s.Status.Conditions, valkeyv1.ConditionReady).Message).To(ContainSubstring("ValkeyCluster later does not exist"))
		Expect(s.Status.LastScheduleTime).NotTo(BeNil(), "the minute it was created in has passed, without a backup")
		Expect(s.Status.LastBackup).To(BeEmpty())
		Eventually(func() int { return eventsWithReason(ns, valkeyv1.ReasonClusterNotFound) }, 10*time.Second).Should(Equal(1))
		Consistently(func() []string { return backupNames(ns) }, 2*time.Second).Should(BeEmpty())

		By("the cluster is created")
		newCluster(ns, "later", 1, 0)
		Eventually(scheduleState(ns, "early"), 10*time.Second).Should(Equal("True/Scheduled"))
		// A minute that starts now is scheduled as usual; the one that passed is not made up.
		Expect(backupNames(ns)).NotTo(ContainElement(valkeyv1.ScheduledBackupName("early", s.Status.LastScheduleTime.Time)),
			"the minute that passed is not made up")
	})

	It("lets a scheduled time pass without a backup while one of its backups is unfinished", func() {
		ns := newNamespace()
		newCluster(ns, "busy", 1, 0)
		running := scheduledBackup(ns, "slow", 1, "")
		// Reported, the backup is in the controller's cache before the schedule is read.
		Eventually(func() valkeyv1.BackupPhase { return getBackup(ns, running).Status.Phase }, 10*time.Second).Should(Equal(valkeyv1.BackupPending))
		newSchedule(ns, "slow", "busy", "* * * * *", 2)
		Eventually(func() *metav1.Time { return getSchedule(ns, "slow").Status.LastScheduleTime }, 20*time.Second).ShouldNot(BeNil())
		Expect(getSchedule(ns, "slow").Status.LastBackup).To(BeEmpty())
		Expect(scheduleState(ns, "slow")()).To(Equal("True/Scheduled"))
		Eventually(func() int { return eventsWithReason(ns, valkeyv1.EventBackupSkipped) }, 10*time.Second).Should(Equal(1))
		Expect(backupNames(ns)).To(ConsistOf(running))
	})
})

// eventCount counts the events of ns with the reason, each repeat of a series included.
func eventCount(ns, reason string) int {
	var list eventsv1.EventList
	ExpectWithOffset(1, k8s.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
	n := 0
	for _, e := range list.Items {
		switch {
		case e.Reason != reason:
		case e.Series != nil:
			n += int(e.Series.Count)
		default:
			n++
		}
	}
	return n
}
