package topologycontroller_test

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

func newSchedule(ns, name, cluster, schedule string, retention int32) *valkeyv1.ValkeyBackupSchedule {
	s := &valkeyv1.ValkeyBackupSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: valkeyv1.ValkeyBackupScheduleSpec{ClusterName: cluster, Schedule: schedule, Retention: retention, VolumeSnapshotClassName: ptr.To("fast")}}
	ExpectWithOffset(1, k8s.Create(context.Background(), s)).To(Succeed())
	return s
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

// scheduledBackup creates a backup as schedule s made it (labelled with its name and UID, of
// its cluster), in the given final phase ("" for none: it stays in progress).
func scheduledBackup(s *valkeyv1.ValkeyBackupSchedule, minute int, phase valkeyv1.BackupPhase) string {
	return labelledBackup(s.Namespace, s.Name, s.Spec.ClusterName, minute, phase, map[string]string{
		valkeyv1.LabelBackupSchedule: s.Name, valkeyv1.LabelBackupScheduleUID: string(s.UID)})
}

// labelledBackup creates the backup <prefix>-<minute> of cluster with the labels, in the
// given final phase ("" for none: it stays in progress).
func labelledBackup(ns, prefix, cluster string, minute int, phase valkeyv1.BackupPhase, labels map[string]string) string {
	name := fmt.Sprintf("%s-%d", prefix, 29000000+minute)
	b := &valkeyv1.ValkeyBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: valkeyv1.ValkeyBackupSpec{ClusterName: cluster}}
	ExpectWithOffset(1, k8s.Create(context.Background(), b)).To(Succeed())
	if phase != "" {
		// The controller reports the backup (its cluster is missing) meanwhile: read again.
		EventuallyWithOffset(2, func() error {
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
		Expect(b.Labels).To(HaveKeyWithValue(valkeyv1.LabelBackupScheduleUID, string(s.UID)), "the schedule knows its own backups by its UID")
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
		s := newSchedule(ns, "keep", "gone", "0 0 1 1 *", 2)
		oldFailed := scheduledBackup(s, 1, valkeyv1.BackupFailed)
		inProgress := scheduledBackup(s, 2, "")
		c1 := scheduledBackup(s, 3, valkeyv1.BackupCompleted)
		c2 := scheduledBackup(s, 4, valkeyv1.BackupCompleted)
		c3 := scheduledBackup(s, 5, valkeyv1.BackupCompleted)
		c4 := scheduledBackup(s, 6, valkeyv1.BackupCompleted)
		newFailed := scheduledBackup(s, 7, valkeyv1.BackupFailed)
		other := scheduledBackup(newSchedule(ns, "other", "gone", "0 0 1 1 *", 2), 1, valkeyv1.BackupCompleted)
		_, _ = c1, c2
		Eventually(func() []string { return backupNames(ns) }, 20*time.Second).Should(ConsistOf(inProgress, c3, c4, newFailed, other))
		Eventually(func() int { return eventCount(ns, valkeyv1.EventBackupPruned) }, 10*time.Second).Should(Equal(3))
		Expect(backupNames(ns)).NotTo(ContainElement(oldFailed))
		Expect(scheduleState(ns, "keep")()).To(Equal("False/ClusterNotFound"))
	})

	It("prunes only the backups it made of its own cluster, not an earlier same-named schedule's", func() {
		ns := newNamespace()
		By("three completed backups of cluster orders by an earlier schedule daily (deleted, its backups kept)")
		var orders []string
		for minute := 1; minute <= 2; minute++ {
			// As this version labels them: the earlier schedule's UID.
			orders = append(orders, labelledBackup(ns, "daily", "orders", minute, valkeyv1.BackupCompleted, map[string]string{
				valkeyv1.LabelBackupSchedule: "daily", valkeyv1.LabelBackupScheduleUID: "1b4e28ba-2fa1-11d2-883f-0016d3cca427", valkeyv1.LabelCluster: "orders"}))
		}
		// As an earlier version of the operator labelled them: the schedule's name only.
		orders = append(orders, labelledBackup(ns, "daily", "orders", 3, valkeyv1.BackupCompleted, map[string]string{
			valkeyv1.LabelBackupSchedule: "daily", valkeyv1.LabelCluster: "orders"}))

		By("a new schedule daily for cluster sessions, keeping one")
		s := newSchedule(ns, "daily", "sessions", "0 0 1 1 *", 1)
		Expect(s.UID).NotTo(BeEmpty())
		mine1 := scheduledBackup(s, 10, valkeyv1.BackupCompleted)
		mine2 := scheduledBackup(s, 11, valkeyv1.BackupCompleted)
		// Its UID on a backup of another cluster (set by hand) does not make it the schedule's.
		forged := labelledBackup(ns, "forged", "orders", 12, valkeyv1.BackupCompleted, map[string]string{
			valkeyv1.LabelBackupSchedule: "daily", valkeyv1.LabelBackupScheduleUID: string(s.UID)})

		Eventually(func() []string { return backupNames(ns) }, 20*time.Second).ShouldNot(ContainElement(mine1), "its own are pruned")
		Consistently(func() []string { return backupNames(ns) }, 3*time.Second).Should(ConsistOf(append(orders, mine2, forged)),
			"the backups of orders are not the schedule's to delete")
		Expect(eventCount(ns, valkeyv1.EventBackupPruned)).To(Equal(1))
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
		// With persistence (a backup of a cluster without it fails at once), and no
		// workload: its backup waits for the cluster to settle.
		Expect(k8s.Create(context.Background(), &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": valkeyv1.GroupVersion.String(), "kind": "ValkeyCluster",
			"metadata": map[string]any{"name": "busy", "namespace": ns},
			"spec":     map[string]any{"shards": int64(1), "replicas": int64(0), "persistence": map[string]any{"size": "1Gi"}},
		}})).To(Succeed())
		s := newSchedule(ns, "slow", "busy", "0 0 1 1 *", 2)
		running := scheduledBackup(s, 1, "")
		// Reported, the backup is in the controller's cache before the schedule is due.
		Eventually(func() valkeyv1.BackupPhase { return getBackup(ns, running).Status.Phase }, 10*time.Second).Should(Equal(valkeyv1.BackupPending))
		s = getSchedule(ns, "slow")
		s.Spec.Schedule = "* * * * *"
		Expect(k8s.Update(context.Background(), s)).To(Succeed())
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
