package e2e

import (
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// Backups of the sample under acknowledged writes (WAIT 1), the cluster deleted with its
// claims, and a restore under a new name that must hold every key acknowledged before the
// backup's saved point; then a schedule's retention.
var _ = Describe("Backup and restore", Label("backup"), Ordered, func() {
	var (
		ns      string
		cluster *valkeyv1.ValkeyCluster
		backup  *valkeyv1.ValkeyBackup
		before  []int // live keys acknowledged before the saved point
		oldIDs  map[string]string
	)

	BeforeAll(func() {
		ns = newNamespace("backup")
		cluster = newCluster(ns, "my-cluster", 3, 1, persistence("1Gi", expandableClass, valkeyv1.ReclaimDelete))
	})

	It("backs the sample up under writes: one snapshot per shard, nothing restarted", func() {
		waitReady(cluster, 6*time.Minute)
		writeKeys(cluster, "base", 20000)
		uids := podUIDs(cluster)
		w := startAckWriter(cluster, "live")
		Eventually(w.count).WithTimeout(time.Minute).Should(BeNumerically(">=", 1000), "the writer is acknowledged")

		backup = &valkeyv1.ValkeyBackup{
			ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: ns},
			Spec:       valkeyv1.ValkeyBackupSpec{ClusterName: cluster.Name},
		}
		created := time.Now()
		Expect(k8s.Create(ctx, backup)).To(Succeed())
		backup = waitBackup(backup, valkeyv1.BackupCompleted, 4*time.Minute)
		took := time.Since(created)
		savedAt := savedPoint(backup)
		n := w.count()
		Eventually(w.count).WithTimeout(time.Minute).Should(BeNumerically(">=", n+300), "writes go on after the backup")
		before = w.ackedBefore(savedAt)
		acked, errs := w.stop()
		GinkgoWriter.Printf("backup: Completed %s after creation; saved point %s; %d live keys acknowledged in all, %d before the saved point; refused %v\n",
			took.Round(100*time.Millisecond), savedAt.Format(time.RFC3339Nano), len(acked), len(before), errs)
		Expect(before).NotTo(BeEmpty(), "keys were acknowledged before the saved point")

		Expect(backup.Status.ShardCount).To(Equal(int32(3)))
		Expect(backup.Status.Shards).To(HaveLen(3))
		roles := map[string]valkeyv1.Role{}
		for _, n := range clusterNodes(cluster) {
			roles[n.Name] = n.Status.Topology.Role
		}
		for _, s := range backup.Status.Shards {
			Expect(s.SnapshotName).To(Equal(valkeyv1.SnapshotName(backup.Name, s.Shard)))
			Expect(s.Size).NotTo(BeEmpty(), "shard %d size", s.Shard)
			Expect(roles[s.Node]).To(Equal(valkeyv1.RoleReplica), "shard %d was saved on a replica, not its primary", s.Shard)
		}
		Expect(readySnapshots(ns, backup.Name)).To(HaveLen(3), "three VolumeSnapshots ready to use")
		Expect(podUIDs(cluster)).To(Equal(uids), "no pod was replaced")
		for _, n := range clusterNodes(cluster) {
			restarts, _ := containerState(getPod(n), "valkey")
			Expect(restarts).To(BeZero(), "%s restarted", n.Name)
		}
		oldIDs = nodeIDs(cluster)
	})

	It("keeps the snapshots when the cluster is deleted with reclaimPolicy Delete", func() {
		Expect(k8s.Delete(ctx, cluster)).To(Succeed())
		Eventually(func(g Gomega) {
			var claims corev1.PersistentVolumeClaimList
			g.Expect(k8s.List(ctx, &claims, client.InNamespace(ns), client.MatchingLabels{valkeyv1.LabelCluster: cluster.Name})).To(Succeed())
			g.Expect(claims.Items).To(BeEmpty(), "claims deleted")
			g.Expect(clusterNodes(cluster)).To(BeEmpty(), "nodes deleted")
		}).WithTimeout(4 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
		Expect(readySnapshots(ns, backup.Name)).To(HaveLen(3), "the backup's snapshots outlive the cluster")
	})

	It("restores under a new name: Ready, every key acknowledged before the saved point, fresh identities, cluster check clean", func() {
		restored := buildCluster(ns, "restored", 3, 1, persistence("1Gi", expandableClass, valkeyv1.ReclaimDelete))
		restored.Spec.RestoreFrom = backup.Name
		start := time.Now()
		Expect(k8s.Create(ctx, restored)).To(Succeed())
		waitReady(restored, 6*time.Minute)
		GinkgoWriter.Printf("restore: Ready %s after creation\n", time.Since(start).Round(100*time.Millisecond))
		Expect(status.IsTrue(getCluster(restored).Status.Conditions, valkeyv1.ConditionRestored)).To(BeTrue(), "Restored")
		expectKeys(restored, "base", seq(20000))
		expectKeys(restored, "live", before)
		expectClusterCheck(restored)
		for node, id := range nodeIDs(restored) {
			for oldNode, oldID := range oldIDs {
				Expect(id).NotTo(Equal(oldID), "%s has the ID %s of the backed-up %s", node, id, oldNode)
			}
		}
	})
})

var _ = Describe("Scheduled backups", Label("backup"), func() {
	It("every minute with retention 2: after four minutes exactly two backups and their snapshots remain", func() {
		ns := newNamespace("schedule")
		cluster := newCluster(ns, "small", 1, 1, persistence("1Gi", expandableClass, valkeyv1.ReclaimDelete))
		waitReady(cluster, 5*time.Minute)
		writeKeys(cluster, "k", 1000)
		sched := &valkeyv1.ValkeyBackupSchedule{
			ObjectMeta: metav1.ObjectMeta{Name: "every-minute", Namespace: ns},
			Spec:       valkeyv1.ValkeyBackupScheduleSpec{ClusterName: cluster.Name, Schedule: "* * * * *", Retention: 2},
		}
		Expect(k8s.Create(ctx, sched)).To(Succeed())

		By("four scheduled minutes pass")
		first := ""
		Eventually(func(g Gomega) {
			cur := &valkeyv1.ValkeyBackupSchedule{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(sched), cur)).To(Succeed())
			g.Expect(cur.Status.LastBackup).NotTo(BeEmpty())
			if first == "" {
				first = cur.Status.LastBackup
			}
			g.Expect(scheduledMinute(cur.Status.LastBackup) - scheduledMinute(first)).To(BeNumerically(">=", 3))
		}).WithTimeout(6 * time.Minute).WithPolling(5 * time.Second).Should(Succeed())

		By("suspended, the last backup finishes and retention leaves two")
		Eventually(func() error {
			cur := &valkeyv1.ValkeyBackupSchedule{}
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(sched), cur); err != nil {
				return err
			}
			cur.Spec.Suspend = true
			return k8s.Update(ctx, cur)
		}).WithTimeout(30 * time.Second).Should(Succeed())
		Eventually(func(g Gomega) {
			var list valkeyv1.ValkeyBackupList
			g.Expect(k8s.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{valkeyv1.LabelBackupSchedule: sched.Name})).To(Succeed())
			g.Expect(list.Items).To(HaveLen(2), "backups kept")
			for _, b := range list.Items {
				g.Expect(b.Status.Phase).To(Equal(valkeyv1.BackupCompleted), "%s", b.Name)
				g.Expect(readySnapshots(ns, b.Name)).To(HaveLen(1), "%s has its snapshot", b.Name)
			}
			g.Expect(snapshots(ns, "")).To(HaveLen(2), "the pruned backups' snapshots are deleted")
		}).WithTimeout(3 * time.Minute).WithPolling(5 * time.Second).Should(Succeed())
	})
})

// A cluster deleted under reclaimPolicy Retain leaves its claims, and one created again under
// its name with restoreFrom must not start on them: their data went on after the backup. The
// restored node reports VolumeReady=False RestoreClaimExists, the cluster Restored=False
// RestoreRefused, both with a Warning event, and the claim is left as it is; once it is
// deleted (docs/backup-restore.md, "Restoring under a name whose claims were retained") the
// node's claim is made from its snapshot and the cluster serves the backup's data.
var _ = Describe("A restore under a name whose claims were retained", Label("backup"), func() {
	It("a 1 × 0 cluster restored under its own name waits for its retained claim to be deleted, then serves the backup's value", func() {
		ns := newNamespace("restore-retained")
		cluster := newCluster(ns, "orders", 1, 0, persistence("1Gi", expandableClass, valkeyv1.ReclaimRetain))
		waitReady(cluster, 5*time.Minute)
		node := valkeyv1.NodeName(cluster.Name, 0, 0)
		claimKey := client.ObjectKey{Namespace: ns, Name: valkeyv1.ClaimName(node)}
		setKey(cluster, "k", "v1")

		By("a backup holds k=v1")
		backup := &valkeyv1.ValkeyBackup{
			ObjectMeta: metav1.ObjectMeta{Name: "b1", Namespace: ns},
			Spec:       valkeyv1.ValkeyBackupSpec{ClusterName: cluster.Name},
		}
		Expect(k8s.Create(ctx, backup)).To(Succeed())
		backup = waitBackup(backup, valkeyv1.BackupCompleted, 4*time.Minute)
		Expect(readySnapshots(ns, backup.Name)).To(HaveLen(1), "the backup's VolumeSnapshot is ready to use")
		snapshot := valkeyv1.SnapshotName(backup.Name, 0)

		By("k=v2 written after the backup and saved to the node's claim")
		setKey(cluster, "k", "v2")
		pw := password(cluster)
		vc := nodeClient(nodeByName(cluster, node), pw)
		defer vc.Close()
		Eventually(func() error { return vc.Do(ctx, vc.B().Save().Build()).Error() }).
			WithTimeout(30*time.Second).Should(Succeed(), "SAVE on %s (refused while a background save runs)", node)

		By("the cluster deleted, its claim retained")
		Expect(k8s.Delete(ctx, getCluster(cluster), client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(cluster), &valkeyv1.ValkeyCluster{}))).To(BeTrue(), "the ValkeyCluster is gone")
			g.Expect(clusterNodes(cluster)).To(BeEmpty(), "nodes deleted")
			g.Expect(clusterPods(cluster)).To(BeEmpty(), "pods deleted")
			secret := client.ObjectKey{Namespace: ns, Name: valkeyv1.PasswordSecretName(cluster.Name)}
			g.Expect(apierrors.IsNotFound(k8s.Get(ctx, secret, &corev1.Secret{}))).To(BeTrue(), "the generated password Secret is collected")
		}).WithTimeout(4 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
		var retained corev1.PersistentVolumeClaim
		Expect(k8s.Get(ctx, claimKey, &retained)).To(Succeed(), "claim of %s retained", node)

		By("created again under the same name, restoring b1")
		restored := buildCluster(ns, cluster.Name, 1, 0, persistence("1Gi", expandableClass, valkeyv1.ReclaimRetain))
		restored.Spec.RestoreFrom = backup.Name
		Expect(k8s.Create(ctx, restored)).To(Succeed())
		Eventually(func(g Gomega) {
			var n valkeyv1.ValkeyNode
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: node}, &n)).To(Succeed())
			v := status.Get(n.Status.Conditions, valkeyv1.ConditionVolumeReady)
			g.Expect(v).NotTo(BeNil(), "%s VolumeReady", node)
			g.Expect(v.Status).To(Equal(metav1.ConditionFalse), "%s VolumeReady: %s %s", node, v.Reason, v.Message)
			g.Expect(v.Reason).To(Equal(valkeyv1.ReasonRestoreClaimExists), "%s VolumeReady: %s", node, v.Message)
			r := status.Get(getCluster(restored).Status.Conditions, valkeyv1.ConditionRestored)
			g.Expect(r).NotTo(BeNil(), "Restored")
			g.Expect(r.Status).To(Equal(metav1.ConditionFalse), "Restored: %s %s", r.Reason, r.Message)
			g.Expect(r.Reason).To(Equal(valkeyv1.ReasonRestoreRefused), "Restored: %s", r.Message)
		}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		Consistently(func(g Gomega) {
			cur := getCluster(restored)
			g.Expect(status.IsTrue(cur.Status.Conditions, valkeyv1.ConditionRestored)).To(BeFalse(), "Restored")
			g.Expect(status.IsTrue(cur.Status.Conditions, valkeyv1.ConditionReady)).To(BeFalse(), "Ready")
			var pvc corev1.PersistentVolumeClaim
			g.Expect(k8s.Get(ctx, claimKey, &pvc)).To(Succeed(), "the retained claim exists")
			g.Expect(pvc.UID).To(Equal(retained.UID), "the retained claim, not a new one")
			g.Expect(pvc.DeletionTimestamp).To(BeNil(), "the retained claim is not being deleted")
			g.Expect(pvc.Spec.DataSource).To(BeNil(), "the retained claim is unchanged")
			for _, p := range clusterPods(restored) {
				g.Expect(mountsClaim(&p, claimKey.Name)).To(BeFalse(), "%s mounts the retained claim", p.Name)
			}
		}).WithTimeout(30*time.Second).WithPolling(time.Second).Should(Succeed(), "the restore waits, the retained claim untouched")
		notes := func(kind, name, reason string) []string {
			var out []string
			for _, e := range warningEvents(ns, kind, name, reason) {
				out = append(out, e.Note)
			}
			return out
		}
		Expect(notes("ValkeyNode", node, valkeyv1.ReasonRestoreClaimExists)).To(ContainElement(ContainSubstring(claimKey.Name)),
			"a Warning event RestoreClaimExists on %s names the claim", node)
		Expect(notes("ValkeyCluster", cluster.Name, valkeyv1.ReasonRestoreRefused)).To(ContainElement(ContainSubstring(node)),
			"a Warning event RestoreRefused on the cluster names the node")

		By("the retained claim deleted, as docs/backup-restore.md says")
		out, err := kubectl("-n", ns, "delete", "pvc", claimKey.Name, "--wait=false")
		Expect(err).NotTo(HaveOccurred(), out)
		waitReady(restored, 5*time.Minute)
		Eventually(func() bool {
			return status.IsTrue(getCluster(restored).Status.Conditions, valkeyv1.ConditionRestored)
		}).WithTimeout(time.Minute).Should(BeTrue(), "Restored")
		var made corev1.PersistentVolumeClaim
		Expect(k8s.Get(ctx, claimKey, &made)).To(Succeed())
		Expect(made.UID).NotTo(Equal(retained.UID), "a new claim")
		Expect(made.Spec.DataSource).NotTo(BeNil(), "%s has a dataSource", made.Name)
		Expect(made.Spec.DataSource.Name).To(Equal(snapshot), "%s is made from the backup's snapshot", made.Name)
		n := nodeByName(restored, node)
		Expect(n.Status.Volume).NotTo(BeNil(), "%s status.volume", node)
		Expect(n.Status.Volume.RestoredFrom).To(Equal(snapshot), "%s status.volume.restoredFrom", node)
		Expect(getKey(restored, "k")).To(Equal("v1"), "k as the backup holds it, not as written after")
	})
})

// setKey sets key to value through a cluster client.
func setKey(c *valkeyv1.ValkeyCluster, key, value string) {
	vc := clusterClient(c)
	defer vc.Close()
	ExpectWithOffset(1, vc.Do(ctx, vc.B().Set().Key(key).Value(value).Build()).Error()).To(Succeed(), "SET %s", key)
}

// getKey reads key through a cluster client.
func getKey(c *valkeyv1.ValkeyCluster, key string) string {
	vc := clusterClient(c)
	defer vc.Close()
	v, err := vc.Do(ctx, vc.B().Get().Key(key).Build()).ToString()
	ExpectWithOffset(1, err).NotTo(HaveOccurred(), "GET %s", key)
	return v
}

// waitBackup waits for the backup to reach phase and returns it; it fails at once on Failed.
func waitBackup(b *valkeyv1.ValkeyBackup, phase valkeyv1.BackupPhase, timeout time.Duration) *valkeyv1.ValkeyBackup {
	cur := &valkeyv1.ValkeyBackup{}
	EventuallyWithOffset(1, func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(b), cur)).To(Succeed())
		ready := status.Get(cur.Status.Conditions, valkeyv1.ConditionReady)
		if cur.Status.Phase == valkeyv1.BackupFailed && phase != valkeyv1.BackupFailed {
			StopTrying("backup failed").Attach("Ready", ready).Now()
		}
		g.Expect(cur.Status.Phase).To(Equal(phase), "Ready: %+v", ready)
	}).WithTimeout(timeout).WithPolling(time.Second).Should(Succeed())
	return cur
}

// savedPoint is the earliest saved point of the backup's shards: a key acknowledged before it
// was on its shard's primary and on the saved node before that shard's BGSAVE.
func savedPoint(b *valkeyv1.ValkeyBackup) time.Time {
	var first time.Time
	for _, s := range b.Status.Shards {
		ExpectWithOffset(1, s.SavedAt).NotTo(BeNil(), "shard %d savedAt", s.Shard)
		if first.IsZero() || s.SavedAt.Time.Before(first) {
			first = s.SavedAt.Time
		}
	}
	return first
}

var volumeSnapshotList = schema.GroupVersionKind{Group: "snapshot.storage.k8s.io", Version: "v1", Kind: "VolumeSnapshotList"}

// snapshots lists the namespace's VolumeSnapshots, of one backup when backup is set.
func snapshots(ns, backup string) []unstructured.Unstructured {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(volumeSnapshotList)
	opts := []client.ListOption{client.InNamespace(ns)}
	if backup != "" {
		opts = append(opts, client.MatchingLabels{valkeyv1.LabelBackup: backup})
	}
	ExpectWithOffset(1, k8s.List(ctx, list, opts...)).To(Succeed())
	return list.Items
}

// readySnapshots is the backup's VolumeSnapshots that are ready to use.
func readySnapshots(ns, backup string) []string {
	var out []string
	for _, s := range snapshots(ns, backup) {
		if ready, _, _ := unstructured.NestedBool(s.Object, "status", "readyToUse"); ready {
			out = append(out, s.GetName())
		}
	}
	return out
}

// scheduledMinute is the unix minute in a scheduled backup's name (<schedule>-<minute>).
func scheduledMinute(name string) int64 {
	minute, err := strconv.ParseInt(name[strings.LastIndex(name, "-")+1:], 10, 64)
	ExpectWithOffset(1, err).NotTo(HaveOccurred(), name)
	return minute
}
