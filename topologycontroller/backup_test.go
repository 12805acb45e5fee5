package topologycontroller_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/valkey-io/valkey-go"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// formPersistentCluster is formCluster with spec.persistence (and the append-only file).
func formPersistentCluster(ns, name string, shards, replicas int32, aof bool) (*fakeWorkload, string) {
	f := startFakeWorkload(ns)
	DeferCleanup(f.stop)
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": valkeyv1.GroupVersion.String(),
		"kind":       "ValkeyCluster",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{"shards": int64(shards), "replicas": int64(replicas),
			"persistence": map[string]any{"size": "1Gi", "aof": map[string]any{"enabled": aof}}},
	}}
	ExpectWithOffset(1, k8s.Create(context.Background(), u)).To(Succeed())
	pw := clusterPassword(ns, name)
	EventuallyWithOffset(1, clusterReady(ns, name), formTimeout).Should(Succeed())
	EventuallyWithOffset(1, func() error { return checkHealthy(f, pw, int(shards), int(replicas)) }, 30*time.Second).Should(Succeed())
	for _, n := range listNodes(ns) {
		ExpectWithOffset(1, n.Finalizers).To(ContainElement(valkeyv1.PVCProtectionFinalizer), "%s is born protected", n.Name)
	}
	return f, pw
}

func newBackup(ns, name, cluster string) {
	b := &valkeyv1.ValkeyBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: valkeyv1.ValkeyBackupSpec{ClusterName: cluster}}
	ExpectWithOffset(1, k8s.Create(context.Background(), b)).To(Succeed())
}

func getBackup(ns, name string) *valkeyv1.ValkeyBackup {
	var b valkeyv1.ValkeyBackup
	ExpectWithOffset(1, k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &b)).To(Succeed())
	return &b
}

// backupState is "<phase>/<Ready reason>" of a backup.
func backupState(ns, name string) func() string {
	return func() string {
		b := getBackup(ns, name)
		c := status.Get(b.Status.Conditions, valkeyv1.ConditionReady)
		if c == nil {
			return string(b.Status.Phase) + "/"
		}
		return string(b.Status.Phase) + "/" + c.Reason
	}
}

func backupMessage(ns, name string) string {
	c := status.Get(getBackup(ns, name).Status.Conditions, valkeyv1.ConditionReady)
	if c == nil {
		return ""
	}
	return c.Message
}

// reportSnapshot plays the volume controller: SnapshotReady and status.volume.snapshot of
// a node, with the volume field manager.
func reportSnapshot(ns, node string, cond metav1.Condition, snap *valkeyv1.SnapshotStatus) {
	a := status.Applier{Client: k8s, FieldManager: valkeyv1.FieldManagerVolume}
	ExpectWithOffset(1, a.ApplyNode(context.Background(), getNode(ns, node), status.VolumeShare{
		Conditions: []metav1.Condition{cond}, Volume: &valkeyv1.VolumeStatus{Snapshot: snap},
	})).To(Succeed())
}

// snapshotReady reports the node's snapshot for the backup ready to use.
func snapshotReady(ns, node, backup string, shard int32) {
	reportSnapshot(ns, node, status.Condition(valkeyv1.ConditionSnapshotReady, true, valkeyv1.ReasonSnapshotReady, ""),
		&valkeyv1.SnapshotStatus{Name: valkeyv1.SnapshotName(backup, shard), Backup: backup, ReadyToUse: true, RestoreSize: "1Gi"})
}

// scaleInSavedReplica forms a persistent 1 × 1 cluster, takes the backup "b" of it (saved
// on the replica, its snapshot cut), scales the replicas to 0 and waits until the cluster
// says the saved replica stays for the backup. It returns the replica's name.
func scaleInSavedReplica(ns, cluster string) string {
	formPersistentCluster(ns, cluster, 1, 1, false)
	replica := shardReplica(ns, cluster, 0)
	ExpectWithOffset(1, replica).To(Equal(valkeyv1.NodeName(cluster, 0, 1)), "the replica is the index a scale-in removes")
	newBackup(ns, "b", cluster)
	EventuallyWithOffset(1, backupState(ns, "b"), 60*time.Second).Should(Equal("Snapshotting/Snapshotting"))
	cutSnapshot(ns, replica, "b", 0)

	By("the replicas scale in while the snapshot uploads: the saved replica stays, and the cluster says why")
	patchSpec(ns, cluster, `{"replicas":0}`)
	EventuallyWithOffset(1, func() string { return progressMessage(ns, cluster) }, 20*time.Second).
		Should(ContainSubstring("node " + replica + " is removed once the backup b has its snapshot"))
	return replica
}

// cutSnapshot reports the node's snapshot for the backup cut (it has a creationTime), not
// yet ready to use.
func cutSnapshot(ns, node, backup string, shard int32) {
	cut := metav1.Now()
	reportSnapshot(ns, node, status.Condition(valkeyv1.ConditionSnapshotReady, false, valkeyv1.ReasonSnapshotCut, "uploading"),
		&valkeyv1.SnapshotStatus{Name: valkeyv1.SnapshotName(backup, shard), Backup: backup, CreationTime: &cut})
}

// savedPointSoon waits for the node's saved point and returns it: a round writes it with the
// nodes' statuses, after the backup's own (a backup seen Snapshotting may be a moment ahead).
func savedPointSoon(ns, node string) *valkeyv1.SavedPoint {
	var sp *valkeyv1.SavedPoint
	EventuallyWithOffset(1, func() *valkeyv1.SavedPoint { sp = savedPointOf(ns, node); return sp }, 10*time.Second).ShouldNot(BeNil(), node)
	return sp
}

// savedPointOf is the node's saved point while BackupPointSaved is True (nil otherwise).
func savedPointOf(ns, node string) *valkeyv1.SavedPoint {
	n := getNode(ns, node)
	if n.Status.Topology == nil || !status.IsTrue(n.Status.Conditions, valkeyv1.ConditionBackupPointSaved) {
		return nil
	}
	return n.Status.Topology.SavedPoint
}

// noSavedPoints fails while a node of ns carries a saved point or BackupPointSaved.
func noSavedPoints(ns string) error {
	for _, n := range listNodes(ns) {
		if (n.Status.Topology != nil && n.Status.Topology.SavedPoint != nil) || status.Get(n.Status.Conditions, valkeyv1.ConditionBackupPointSaved) != nil {
			return fmt.Errorf("%s still carries a saved point", n.Name)
		}
	}
	return nil
}

// infoInt reads one INFO field of a server as a number.
func infoInt(addr, pw, section, key string) int64 {
	out, err := cmd(addr, pw, "INFO", section)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	v, err := strconv.ParseInt(parseInfoField(out, key), 10, 64)
	ExpectWithOffset(1, err).NotTo(HaveOccurred(), key)
	return v
}

func parseInfoField(out, key string) string {
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), key+":"); ok {
			return v
		}
	}
	return ""
}

// writer writes keys through the cluster until stopped, counting the writes acknowledged
// and those refused.
type writer struct {
	acked, failed atomic.Int64
	stop          chan struct{}
	wg            sync.WaitGroup
}

func startWriter(f *fakeWorkload, pw string) *writer {
	w := &writer{stop: make(chan struct{})}
	c := clusterClient(f, pw)
	w.wg.Add(1)
	go func() {
		defer GinkgoRecover()
		defer w.wg.Done()
		defer c.Close()
		for i := 0; ; i++ {
			select {
			case <-w.stop:
				return
			default:
			}
			if err := c.Do(context.Background(), c.B().Set().Key("w:"+strconv.Itoa(i)).Value("x").Build()).Error(); err != nil {
				w.failed.Add(1)
			} else {
				w.acked.Add(1)
			}
		}
	}()
	return w
}

func (w *writer) halt() {
	close(w.stop)
	w.wg.Wait()
}

var _ = Describe("Backups", func() {

	It("saves every shard on an in-sync replica while writes go on, then completes once the snapshots are ready", func() {
		ns := newNamespace()
		f, pw := formPersistentCluster(ns, "bk", 2, 1, false)
		writeKeys(f, pw, 500)
		w := startWriter(f, pw)
		Eventually(w.acked.Load, 10*time.Second).Should(BeNumerically(">", 100))

		By("noting each server's offset and LASTSAVE before the backup")
		offsets, lastSaves := map[string]int64{}, map[string]int64{}
		for _, n := range listNodes(ns) {
			addr := f.server(n.Name).Addr()
			offsets[n.Name] = infoInt(addr, pw, "replication", "master_repl_offset")
			lastSaves[n.Name] = infoInt(addr, pw, "persistence", "rdb_last_save_time")
		}
		start := time.Now()
		newBackup(ns, "b1", "bk")

		By("each shard's replica carries the saved point, at or past its primary's offset before the backup")
		Eventually(backupState(ns, "b1"), 60*time.Second).Should(Equal("Snapshotting/Snapshotting"))
		saved := time.Since(start)
		b := getBackup(ns, "b1")
		Expect(b.Status.ShardCount).To(Equal(int32(2)))
		Expect(b.Status.Shards).To(HaveLen(2))
		for _, e := range b.Status.Shards {
			n := getNode(ns, e.Node)
			Expect(n.Status.Topology.Role).To(Equal(valkeyv1.RoleReplica), "shard %d saved on %s", e.Shard, e.Node)
			primary := valkeyv1.NodeName("bk", e.Shard, 1-e.ReplicaIndex)
			Expect(e.Offset).To(BeNumerically(">=", offsets[primary]))
			sp := savedPointSoon(ns, e.Node)
			Expect(sp.Backup).To(Equal("b1"))
			Expect(sp.BackupUID).To(Equal(b.UID))
			Expect(sp.Offset).To(Equal(e.Offset))
			Expect(e.NodeID).To(Equal(n.Status.Topology.NodeID))
			Expect(infoInt(f.server(e.Node).Addr(), pw, "persistence", "rdb_last_save_time")).To(BeNumerically(">", lastSaves[e.Node]), "LASTSAVE of the replica saved")
			Expect(infoInt(f.server(primary).Addr(), pw, "persistence", "rdb_last_save_time")).To(Equal(lastSaves[primary]), "LASTSAVE of the primary")
			Expect(savedPointOf(ns, primary)).To(BeNil())
		}
		Eventually(func() int { return eventCount(ns, valkeyv1.EventPointSaved) }, 10*time.Second).Should(Equal(2))

		By("the volume controller reports both snapshots ready")
		for _, e := range b.Status.Shards {
			snapshotReady(ns, e.Node, "b1", e.Shard)
		}
		Eventually(backupState(ns, "b1"), 30*time.Second).Should(Equal("Completed/Completed"))
		b = getBackup(ns, "b1")
		Expect(b.Status.CompletedAt).NotTo(BeNil())
		for _, e := range b.Status.Shards {
			Expect(e.SnapshotName).To(Equal(valkeyv1.SnapshotName("b1", e.Shard)))
			Expect(e.Size).To(Equal("1Gi"))
			Expect(e.SavedAt).NotTo(BeNil())
		}
		Eventually(func() int { return eventsWithReason(ns, valkeyv1.EventBackupCompleted) }, 10*time.Second).Should(Equal(1))
		Eventually(func() error { return noSavedPoints(ns) }, 20*time.Second).Should(Succeed())

		w.halt()
		GinkgoWriter.Printf("backup figures: every shard saved %v after the backup was created; %d writes acknowledged, %d refused\n", saved, w.acked.Load(), w.failed.Load())
		AddReportEntry("backup", fmt.Sprintf("saved in %v; writes acknowledged %d, refused %d", saved, w.acked.Load(), w.failed.Load()))
		Expect(w.failed.Load()).To(BeZero(), "no write refused during the backup")
		Expect(checkHealthy(f, pw, 2, 1)).To(Succeed())
		Expect(clusterReady(ns, "bk")()).To(Succeed())
	})

	It("waits while the cluster is busy and behind an older backup, and fails on a failed snapshot", func() {
		ns := newNamespace()
		f, pw := formPersistentCluster(ns, "busy", 1, 1, true)
		replica := shardReplica(ns, "busy", 0)

		By("a node not ready keeps the backup Pending, ClusterBusy; a second backup waits for the first")
		f.hold(true, replica)
		n := getNode(ns, replica)
		Expect(f.reportPhase(context.Background(), n, false, valkeyv1.ReasonPodNotReady, podIPOf(n))).To(Succeed())
		newBackup(ns, "first", "busy")
		Eventually(backupState(ns, "first"), 20*time.Second).Should(Equal("Pending/ClusterBusy"))
		Expect(backupMessage(ns, "first")).To(ContainSubstring("node " + replica + " not ready"))
		newBackup(ns, "second", "busy")
		Eventually(backupState(ns, "second"), 20*time.Second).Should(Equal("Pending/WaitingForBackup"))
		Expect(backupMessage(ns, "second")).To(ContainSubstring("first"))
		Consistently(backupState(ns, "first"), 2*time.Second).Should(Equal("Pending/ClusterBusy"))

		By("the node is ready again: the first backup saves the replica, and rewrites its append-only file")
		rewrites := infoInt(f.server(replica).Addr(), pw, "persistence", "aof_rewrites")
		f.hold(false, replica)
		Eventually(backupState(ns, "first"), 60*time.Second).Should(Equal("Snapshotting/Snapshotting"))
		Expect(getBackup(ns, "first").Status.Shards[0].Node).To(Equal(replica))
		Expect(infoInt(f.server(replica).Addr(), pw, "persistence", "aof_rewrites")).To(BeNumerically(">", rewrites))
		savedPointSoon(ns, replica)
		Expect(backupState(ns, "second")()).To(Equal("Pending/WaitingForBackup"))

		By("its snapshot fails: the backup fails with the volume's reason and a Warning event")
		reportSnapshot(ns, replica, status.Condition(valkeyv1.ConditionSnapshotReady, false, valkeyv1.ReasonSnapshotFailed, "the storage refused: out of space"),
			&valkeyv1.SnapshotStatus{Name: valkeyv1.SnapshotName("first", 0), Backup: "first"})
		Eventually(backupState(ns, "first"), 20*time.Second).Should(Equal("Failed/SnapshotFailed"))
		Expect(backupMessage(ns, "first")).To(And(ContainSubstring("shard 0"), ContainSubstring(replica), ContainSubstring("out of space")))
		Eventually(func() int { return eventsWithReason(ns, valkeyv1.ReasonSnapshotFailed) }, 10*time.Second).Should(Equal(1))

		By("the second backup goes on (the failure reported for the first is not taken for its own) and completes")
		Eventually(backupState(ns, "second"), 60*time.Second).Should(Equal("Snapshotting/Snapshotting"))
		Eventually(func() string {
			if sp := savedPointOf(ns, replica); sp != nil {
				return sp.Backup
			}
			return ""
		}, 20*time.Second).Should(Equal("second"))
		Consistently(backupState(ns, "second"), time.Second).Should(Equal("Snapshotting/Snapshotting"))
		snapshotReady(ns, replica, "second", 0)
		Eventually(backupState(ns, "second"), 20*time.Second).Should(Equal("Completed/Completed"))
		Eventually(func() error { return noSavedPoints(ns) }, 20*time.Second).Should(Succeed())
		Expect(backupState(ns, "first")()).To(Equal("Failed/SnapshotFailed"))

		By("a backup deleted while its snapshot is taken: its saved point goes")
		newBackup(ns, "third", "busy")
		Eventually(func() *valkeyv1.SavedPoint { return savedPointOf(ns, replica) }, 60*time.Second).ShouldNot(BeNil())
		Expect(k8s.Delete(context.Background(), getBackup(ns, "third"))).To(Succeed())
		Eventually(func() error { return noSavedPoints(ns) }, 20*time.Second).Should(Succeed())
	})

	It("saves the primary when the replica chosen does not catch up in time", func() {
		ns := newNamespace()
		f, pw := formPersistentCluster(ns, "lag", 1, 1, false)
		replica := shardReplica(ns, "lag", 0)
		primary := valkeyv1.NodeName("lag", 0, 1-getNode(ns, replica).Spec.ReplicaIndex)
		w := startWriter(f, pw)
		defer w.halt()
		Eventually(w.acked.Load, 10*time.Second).Should(BeNumerically(">", 100))

		By("the replica stops applying its primary's stream (CLIENT PAUSE WRITE); its link stays up")
		addr := f.server(replica).Addr()
		_, err := cmd(addr, pw, "CLIENT", "PAUSE", "60000", "WRITE")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _, _ = cmd(addr, pw, "CLIENT", "UNPAUSE") })
		start := time.Now()
		newBackup(ns, "b", "lag")
		Eventually(backupState(ns, "b"), 60*time.Second).Should(Equal("Snapshotting/Snapshotting"))
		Expect(time.Since(start)).To(BeNumerically(">=", testOptions.BackupCatchUpTimeout), "the replica was waited for first")
		Expect(getBackup(ns, "b").Status.Shards).To(ConsistOf(HaveField("Node", primary)))
		savedPointSoon(ns, primary)
		Expect(savedPointOf(ns, replica)).To(BeNil())
		Expect(w.failed.Load()).To(BeZero(), "no write refused")
	})

	It("fails a backup whose BGSAVE fails, with SaveFailed, and the next backup saves", func() {
		ns := newNamespace()
		f, pw := formPersistentCluster(ns, "bad", 1, 1, false)
		replica := shardReplica(ns, "bad", 0)

		By("a directory that is not empty stands where the replica's BGSAVE renames its file")
		addr := f.server(replica).Addr()
		dump := filepath.Join(configValue(addr, pw, "dir"), configValue(addr, pw, "dbfilename"))
		Expect(os.RemoveAll(dump)).To(Succeed()) // the file of the replica's first sync
		Expect(os.MkdirAll(filepath.Join(dump, "in-the-way"), 0o755)).To(Succeed())
		newBackup(ns, "doomed", "bad")
		Eventually(backupState(ns, "doomed"), 60*time.Second).Should(Equal("Failed/SaveFailed"))
		Expect(backupMessage(ns, "doomed")).To(And(ContainSubstring("shard 0"), ContainSubstring(replica), ContainSubstring("rdb_last_bgsave_status:err")))
		Eventually(func() int { return eventsWithReason(ns, valkeyv1.ReasonSaveFailed) }, 10*time.Second).Should(Equal(1))
		Eventually(func() error { return noSavedPoints(ns) }, 20*time.Second).Should(Succeed())

		By("the way is cleared: the next backup saves")
		Expect(os.RemoveAll(dump)).To(Succeed())
		newBackup(ns, "next", "bad")
		Eventually(backupState(ns, "next"), 60*time.Second).Should(Equal("Snapshotting/Snapshotting"))
		savedPointSoon(ns, getBackup(ns, "next").Status.Shards[0].Node)
	})

	It("saves a shard again when the controller restarts during its BGSAVE", func() {
		ns := newNamespace()
		f, pw := formPersistentCluster(ns, "mid", 1, 1, false)
		writeKeys(f, pw, 200)
		replica := shardReplica(ns, "mid", 0)
		addr := f.server(replica).Addr()
		Eventually(func() int64 { return intReply(addr, pw, "DBSIZE") }, 10*time.Second).Should(Equal(int64(200)))

		By("the replica's BGSAVE takes seconds (20 ms per key)")
		_, err := cmd(addr, pw, "CONFIG", "SET", "rdb-key-save-delay", "20000")
		Expect(err).NotTo(HaveOccurred())
		saves := infoInt(addr, pw, "persistence", "rdb_saves")
		newBackup(ns, "b", "mid")
		Eventually(func() int64 { return infoInt(addr, pw, "persistence", "rdb_bgsave_in_progress") }, 30*time.Second).Should(Equal(int64(1)))
		Expect(backupState(ns, "b")()).To(Equal("Saving/Saving"))

		By("the controller restarts while the save runs: the new one saves the shard again")
		mgr.stop()
		restarted := false
		DeferCleanup(func() {
			if !restarted {
				mgr = startManager(testOptions)
			}
		})
		_, err = cmd(addr, pw, "CONFIG", "SET", "rdb-key-save-delay", "0") // for the next save; the running one keeps its pace
		Expect(err).NotTo(HaveOccurred())
		mgr = startManager(testOptions)
		restarted = true
		Eventually(backupState(ns, "b"), 60*time.Second).Should(Equal("Snapshotting/Snapshotting"))
		Expect(infoInt(addr, pw, "persistence", "rdb_saves")).To(BeNumerically(">=", saves+2), "the save in flight, then the new controller's own")
		savedPointSoon(ns, replica)
		Expect(getBackup(ns, "b").Status.Shards).To(ConsistOf(HaveField("Node", replica)))
		snapshotReady(ns, replica, "b", 0)
		Eventually(backupState(ns, "b"), 20*time.Second).Should(Equal("Completed/Completed"))
	})

	It("moves no slot until a backup's snapshots are cut: a scale-out waits for them, not for the upload", func() {
		ns := newNamespace()
		f, pw := formPersistentCluster(ns, "hold", 2, 0, false)
		newBackup(ns, "b", "hold")
		Eventually(backupState(ns, "b"), 60*time.Second).Should(Equal("Snapshotting/Snapshotting"))

		By("a third shard joins while the snapshots are taken: it gets no slot, and the cluster says why")
		setShards(ns, "hold", 3)
		added := valkeyv1.NodeName("hold", 2, 0)
		Eventually(func(g Gomega) {
			var n valkeyv1.ValkeyNode
			g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: added}, &n)).To(Succeed())
			g.Expect(status.IsTrue(n.Status.Conditions, valkeyv1.ConditionClusterJoined)).To(BeTrue(), "the new shard's primary joins")
		}, formTimeout).Should(Succeed())
		Eventually(func() string {
			c := status.Get(getCluster(ns, "hold").Status.Conditions, valkeyv1.ConditionProgressing)
			if c == nil {
				return ""
			}
			return c.Message
		}, 20*time.Second).Should(ContainSubstring("wait for the backup b"))
		Consistently(func() int32 { return getNode(ns, added).Status.Topology.Slots }, 3*time.Second).Should(BeZero())

		By("the snapshots are cut, not yet ready to use: the slots move while the backup waits for them")
		shards := getBackup(ns, "b").Status.Shards
		for _, sh := range shards {
			cutSnapshot(ns, sh.Node, "b", sh.Shard)
		}
		Eventually(func() int32 { return getNode(ns, added).Status.Topology.Slots }, 2*formTimeout).Should(BeNumerically(">", 0))
		Eventually(func() error { return checkHealthy(f, pw, 3, 0) }, 2*formTimeout).Should(Succeed())
		Expect(backupState(ns, "b")()).To(Equal("Snapshotting/Snapshotting"))

		By("the snapshots are ready: the backup completes")
		for _, sh := range shards {
			snapshotReady(ns, sh.Node, "b", sh.Shard)
		}
		Eventually(backupState(ns, "b"), 20*time.Second).Should(Equal("Completed/Completed"))
	})

	It("keeps a saved replica through a scale-in of replicas until its snapshot is ready", func() {
		ns := newNamespace()
		replica := scaleInSavedReplica(ns, "keep")
		Consistently(func() bool { return getNode(ns, replica).DeletionTimestamp.IsZero() }, 2*time.Second).Should(BeTrue())

		By("the snapshot is ready: the backup completes and the replica goes")
		snapshotReady(ns, replica, "b", 0)
		Eventually(backupState(ns, "b"), 20*time.Second).Should(Equal("Completed/Completed"))
		Eventually(func() bool {
			var n valkeyv1.ValkeyNode
			err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: replica}, &n)
			return apierrors.IsNotFound(err) || (err == nil && !n.DeletionTimestamp.IsZero())
		}, 30*time.Second).Should(BeTrue())
	})

	It("fails a backup whose saved node is deleted before its snapshot is ready", func() {
		ns := newNamespace()
		replica := scaleInSavedReplica(ns, "lose")

		By("someone deletes the held replica by hand")
		Expect(k8s.Delete(context.Background(), getNode(ns, replica))).To(Succeed())
		Eventually(backupState(ns, "b"), 20*time.Second).Should(Equal("Failed/SnapshotFailed"))
		Expect(backupMessage(ns, "b")).To(And(ContainSubstring(replica), ContainSubstring("was deleted before its snapshot")))
		Eventually(func() int { return eventsWithReason(ns, valkeyv1.ReasonSnapshotFailed) }, 10*time.Second).Should(Equal(1))
	})

	It("fails a backup whose snapshot is never cut, with SnapshotTimeout, and slots move again", func() {
		// A cut timeout of its own, shorter than the suite's (which no other spec's backup
		// may reach), still long enough for the added shard to be held first.
		opts := testOptions
		opts.BackupCutTimeout = 20 * time.Second
		runWith(opts)
		ns := newNamespace()
		f, pw := formPersistentCluster(ns, "stuck", 1, 0, false)
		newBackup(ns, "b", "stuck")
		Eventually(backupState(ns, "b"), 60*time.Second).Should(Equal("Snapshotting/Snapshotting"))
		saved := getBackup(ns, "b").Status.Shards[0]

		By("no snapshot is ever cut: a shard added meanwhile gets no slot until the cut timeout")
		setShards(ns, "stuck", 2)
		added := valkeyv1.NodeName("stuck", 1, 0)
		Eventually(func() string { return progressMessage(ns, "stuck") }, formTimeout).Should(ContainSubstring("wait for the backup b"))
		Eventually(backupState(ns, "b"), opts.BackupCutTimeout+20*time.Second).Should(Equal("Failed/SnapshotTimeout"))
		Expect(time.Since(saved.SavedAt.Time)).To(BeNumerically(">=", opts.BackupCutTimeout))
		Expect(backupMessage(ns, "b")).To(And(ContainSubstring("shard 0"), ContainSubstring(valkeyv1.SnapshotName("b", 0)),
			ContainSubstring(saved.Node), ContainSubstring("not cut within 20s")))
		Eventually(func() int { return eventsWithReason(ns, valkeyv1.ReasonSnapshotTimeout) }, 10*time.Second).Should(Equal(1))

		By("the hold is released: the saved point goes and the new shard gets its slots")
		Eventually(func() error { return noSavedPoints(ns) }, 20*time.Second).Should(Succeed())
		Eventually(func() int32 { return getNode(ns, added).Status.Topology.Slots }, 2*formTimeout).Should(BeNumerically(">", 0))
		Eventually(func() error { return checkHealthy(f, pw, 2, 0) }, 2*formTimeout).Should(Succeed())
	})

	It("fails a backup of a cluster without persistence, and keeps one of a missing cluster Pending", func() {
		ns := newNamespace()
		formCluster(ns, "mem", 1, 0)
		newBackup(ns, "nothing", "mem")
		Eventually(backupState(ns, "nothing"), 20*time.Second).Should(Equal("Failed/PersistenceRequired"))
		Expect(backupMessage(ns, "nothing")).To(ContainSubstring("spec.persistence"))
		Eventually(func() int { return eventsWithReason(ns, valkeyv1.ReasonPersistenceRequired) }, 10*time.Second).Should(Equal(1))
		Expect(noSavedPoints(ns)).To(Succeed())

		newBackup(ns, "orphan", "absent")
		Eventually(backupState(ns, "orphan"), 20*time.Second).Should(Equal("Pending/ClusterNotFound"))
		Expect(backupMessage(ns, "orphan")).To(ContainSubstring("absent"))
	})
})

// shardReplica is the name of the node of a one-replica shard that is its replica now.
func shardReplica(ns, cluster string, shard int32) string {
	replica := valkeyv1.NodeName(cluster, shard, 1)
	if getNode(ns, replica).Status.Topology.Role != valkeyv1.RoleReplica {
		return valkeyv1.NodeName(cluster, shard, 0)
	}
	return replica
}

// configValue is one CONFIG GET parameter of a server.
func configValue(addr, pw, key string) string {
	c, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{addr}, Password: pw, ForceSingleClient: true, DisableCache: true})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	defer c.Close()
	m, err := c.Do(context.Background(), c.B().ConfigGet().Parameter(key).Build()).AsStrMap()
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	ExpectWithOffset(1, m).To(HaveKey(key))
	return m[key]
}

func podIPOf(n *valkeyv1.ValkeyNode) string {
	if n.Status.Workload == nil {
		return ""
	}
	return n.Status.Workload.PodIP
}
