package topologycontroller_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/valkey-io/valkey-go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
	"valkey.io/operator/internal/valkeystart"
)

// restoredDir plays the volume controller and valkey-start for a node with spec.restore: a
// data directory copied from the snapshot (a claim made from it, reported in
// status.volume.restoredFrom), on which valkey-start's restore step ran. "" (a new, empty
// directory) for any other node. ready is false while the snapshot is not published (the
// claim is not ready: no pod). A claim retained under the node's claim name is refused
// (VolumeReady=False, RestoreClaimExists: no pod) or, adopted, started on as it is, with
// valkey-start's restore step run on it and no restoredFrom.
func (f *fakeWorkload) restoredDir(ctx context.Context, n *valkeyv1.ValkeyNode) (dir string, ready bool, err error) {
	r := n.Spec.Restore
	if r == nil || r.SnapshotName == "" {
		return "", true, nil
	}
	claim := valkeyv1.ClaimName(n.Name)
	if kept, ok := f.retained[n.Name]; ok {
		if !kept.adopted {
			return "", false, reportRestoredVolume(ctx, n, false, valkeyv1.ReasonRestoreClaimExists, fmt.Sprintf(
				"claim %s exists (retained by an earlier cluster) but was not created for this node from VolumeSnapshot %s", claim, r.SnapshotName), "")
		}
		dir = kept.dir
	} else {
		src := f.snapshots[r.SnapshotName]
		if src == "" {
			return "", false, nil
		}
		if dir, err = os.MkdirTemp("", "valkey-restored-"); err != nil {
			return "", false, err
		}
		if err := copyTree(src, dir); err != nil {
			return "", false, err
		}
	}
	_, err = valkeystart.Restore(dir, r.Backup, strings.ToLower(string(r.Identity)), func(format string, args ...any) {
		GinkgoWriter.Printf("valkey-start of %s: "+format+"\n", append([]any{n.Name}, args...)...)
	})
	if err != nil {
		return "", false, err
	}
	from := r.SnapshotName
	if _, ok := f.retained[n.Name]; ok {
		from = ""
	}
	return dir, true, reportRestoredVolume(ctx, n, true, valkeyv1.ReasonBound, "claim "+claim+" is bound", from)
}

// reportRestoredVolume plays the volume controller's VolumeReady, VolumeSized and
// status.volume of a restored node.
func reportRestoredVolume(ctx context.Context, n *valkeyv1.ValkeyNode, ready bool, reason, msg, restoredFrom string) error {
	sized := reason
	if ready {
		sized = valkeyv1.ReasonSized
	}
	a := status.Applier{Client: k8s, FieldManager: valkeyv1.FieldManagerVolume}
	return a.ApplyNode(ctx, n, status.VolumeShare{
		Conditions: []metav1.Condition{
			status.Condition(valkeyv1.ConditionVolumeReady, ready, reason, msg),
			status.Condition(valkeyv1.ConditionVolumeSized, ready, sized, msg),
		},
		Volume: &valkeyv1.VolumeStatus{ClaimName: valkeyv1.ClaimName(n.Name), RestoredFrom: restoredFrom},
	})
}

// retain leaves a claim holding dir under node's claim name, adopted or not by the volume
// controller played; forgetRetained deletes it (the user's way out).
func (f *fakeWorkload) retain(node, dir string, adopted bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.retained == nil {
		f.retained = map[string]retainedClaim{}
	}
	f.retained[node] = retainedClaim{dir: dir, adopted: adopted}
}

func (f *fakeWorkload) forgetRetained(node string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.retained, node)
}

// takeSnapshot plays the backup of one node: BGSAVE on its server, then a copy of its data
// directory, kept as snapshot name (published at once, or later with publishSnapshots).
func (f *fakeWorkload) takeSnapshot(node, name, pw string) {
	dir := f.saveAndCopy(node, pw)
	f.publishSnapshots(map[string]string{name: dir})
}

// publishSnapshots makes the snapshots (name → data directory) available to restored nodes:
// until then their claims are not ready, and their servers do not start.
func (f *fakeWorkload) publishSnapshots(snapshots map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.snapshots == nil {
		f.snapshots = map[string]string{}
	}
	for name, dir := range snapshots {
		f.snapshots[name] = dir
	}
}

// saveAndCopy runs BGSAVE on the node's server and returns a copy of its data directory.
func (f *fakeWorkload) saveAndCopy(node, pw string) string {
	s := f.server(node)
	before := intReply(s.Addr(), pw, "LASTSAVE")
	_, err := cmd(s.Addr(), pw, "BGSAVE")
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	EventuallyWithOffset(1, func() bool {
		out, err := cmd(s.Addr(), pw, "INFO", "persistence")
		return err == nil && strings.Contains(out, "rdb_bgsave_in_progress:0") &&
			strings.Contains(out, "rdb_last_bgsave_status:ok") && intReply(s.Addr(), pw, "LASTSAVE") != before
	}, 20*time.Second).Should(BeTrue())
	dir, err := os.MkdirTemp("", "valkey-snapshot-")
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = os.RemoveAll(dir) })
	ExpectWithOffset(1, copyTree(s.Dir, dir)).To(Succeed())
	return dir
}

// copyTree copies the regular files and directories of src into dst.
func copyTree(src, dst string) error {
	return filepath.Walk(src, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		to := filepath.Join(dst, rel)
		if info.IsDir() {
			return os.MkdirAll(to, 0o700)
		}
		b, err := os.ReadFile(path) //nolint:gosec // a test server's data directory
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o600)
	})
}

func intReply(addr, pw string, args ...string) int64 {
	c := single(addr, pw)
	defer c.Close()
	n, err := c.Do(context.Background(), c.B().Arbitrary(args...).Build()).AsInt64()
	if err != nil {
		return -1
	}
	return n
}

// completedBackup creates a ValkeyBackup of cluster and writes its status as the backup
// controller does once every shard's snapshot is ready: shard s from node
// NodeName(cluster, s, replica[s]).
func completedBackup(ns, name, cluster string, shards int32, replica map[int32]int32, ids map[string]string) {
	b := &valkeyv1.ValkeyBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: valkeyv1.ValkeyBackupSpec{ClusterName: cluster}}
	ExpectWithOffset(1, k8s.Create(context.Background(), b)).To(Succeed())
	now := metav1.Now()
	savedAt := metav1.NewMicroTime(now.Time)
	b.Status = valkeyv1.ValkeyBackupStatus{Phase: valkeyv1.BackupCompleted, ShardCount: shards, StartedAt: &now, CompletedAt: &now}
	for s := int32(0); s < shards; s++ {
		node := valkeyv1.NodeName(cluster, s, replica[s])
		b.Status.Shards = append(b.Status.Shards, valkeyv1.BackupShard{
			Shard: s, Node: node, ReplicaIndex: replica[s], NodeID: ids[node], SnapshotName: valkeyv1.SnapshotName(name, s), SavedAt: &savedAt,
		})
	}
	setBackupStatus(b)
}

// setBackupStatus writes b's status over the backup controller's, which may have started the
// backup meanwhile (it leaves a finished backup alone).
func setBackupStatus(b *valkeyv1.ValkeyBackup) {
	EventuallyWithOffset(2, func() error {
		var cur valkeyv1.ValkeyBackup
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(b), &cur); err != nil {
			return err
		}
		cur.Status = b.Status
		return k8s.Status().Update(context.Background(), &cur)
	}, 10*time.Second).Should(Succeed())
}

// backupWithStatus creates a ValkeyBackup of cluster with the given phase and shard count
// (no snapshots): a backup in progress, or of another shard count.
func backupWithStatus(ns, name, cluster string, phase valkeyv1.BackupPhase, shards int32) {
	b := &valkeyv1.ValkeyBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: valkeyv1.ValkeyBackupSpec{ClusterName: cluster}}
	ExpectWithOffset(1, k8s.Create(context.Background(), b)).To(Succeed())
	b.Status = valkeyv1.ValkeyBackupStatus{Phase: phase, ShardCount: shards}
	for s := int32(0); s < shards && phase == valkeyv1.BackupCompleted; s++ {
		b.Status.Shards = append(b.Status.Shards, valkeyv1.BackupShard{Shard: s, SnapshotName: valkeyv1.SnapshotName(name, s)})
	}
	setBackupStatus(b)
}

// newRestoredCluster creates a cluster with persistence restored from backup.
func newRestoredCluster(ns, name, backup string, shards, replicas int32) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": valkeyv1.GroupVersion.String(),
		"kind":       "ValkeyCluster",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"shards": int64(shards), "replicas": int64(replicas), "restoreFrom": backup,
			"persistence": map[string]any{"size": "1Gi"},
		},
	}}
	ExpectWithOffset(1, k8s.Create(context.Background(), u)).To(Succeed())
}

// restoredCondition is the cluster's Restored condition (nil when absent).
func restoredCondition(ns, name string) func() *metav1.Condition {
	return func() *metav1.Condition {
		return status.Get(getCluster(ns, name).Status.Conditions, valkeyv1.ConditionRestored)
	}
}

// clusterView is the sorted "id addr flags primary slots" lines of CLUSTER NODES at addr,
// without the ping and epoch fields that change by themselves.
func clusterView(addr, pw string) []string {
	lines, err := clusterNodes(addr, pw)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	var out []string
	for _, l := range lines {
		out = append(out, fmt.Sprintf("%s %s %s %s %d", l.id, l.addr, l.flags, l.primary, l.slots))
	}
	sort.Strings(out)
	return out
}

// clusterNodeAddrs are the server addresses of the nodes of cluster, by node name.
func clusterNodeAddrs(f *fakeWorkload, ns, cluster string) map[string]string {
	out := map[string]string{}
	for _, n := range listNodes(ns) {
		if n.Spec.ClusterName == cluster {
			if s := f.server(n.Name); s != nil {
				out[n.Name] = s.Addr()
			}
		}
	}
	return out
}

// readKeysAt counts the keys of writeKeys that read back with their value through a
// cluster client of the given servers.
func readKeysAt(addrs map[string]string, pw string, n int) int {
	var init []string
	for _, a := range addrs {
		init = append(init, a)
	}
	c, err := valkey.NewClient(valkey.ClientOption{InitAddress: init, Password: pw, DisableCache: true, Dialer: net.Dialer{Timeout: time.Second}})
	if err != nil {
		return -1
	}
	defer c.Close()
	var cmds valkey.Commands
	for i := range n {
		cmds = append(cmds, c.B().Get().Key(keyName(i)).Build())
	}
	ok := 0
	for i, r := range c.DoMulti(context.Background(), cmds...) {
		if v, err := r.ToString(); err == nil && v == "v"+strconv.Itoa(i) {
			ok++
		}
	}
	return ok
}

// replicaIndexes picks in each shard of cluster a node that is a replica, as the backup
// controller does (an in-sync replica), and waits until it holds its primary's keys.
func replicaIndexes(f *fakeWorkload, ns, cluster, pw string, shards, replicas int32) map[int32]int32 {
	out := map[int32]int32{}
	for s := int32(0); s < shards; s++ {
		var primary string
		for i := int32(0); i <= replicas; i++ {
			n := getNode(ns, valkeyv1.NodeName(cluster, s, i))
			if serverRole(f.server(n.Name).Addr(), n) == "master" {
				primary = f.server(n.Name).Addr()
			} else {
				out[s] = i
			}
		}
		replica := f.server(valkeyv1.NodeName(cluster, s, out[s])).Addr()
		EventuallyWithOffset(1, func() int { return dbSize(replica, pw) }, 20*time.Second).Should(Equal(dbSize(primary, pw)))
	}
	return out
}

// holdFinalizer holds a node's deletion in a test (a slow volume release).
const holdFinalizer = "valkey.io/test-hold"

var _ = Describe("Restore", func() {

	It("restores a backup into a new cluster with every key, fresh node IDs, and never touches the backed-up cluster", func() {
		const keys = 3000
		ns := newNamespace()
		f, pwA := formCluster(ns, "a", 2, 1)
		writeKeys(f, pwA, keys)
		replica := replicaIndexes(f, ns, "a", pwA, 2, 1)
		snapshots := map[string]string{}
		for s := int32(0); s < 2; s++ {
			snapshots[valkeyv1.SnapshotName("bk", s)] = f.saveAndCopy(valkeyv1.NodeName("a", s, replica[s]), pwA)
		}
		idsA := nodeIDs(ns)
		addrsA := clusterNodeAddrs(f, ns, "a")
		viewA := map[string][]string{}
		for name, addr := range addrsA {
			viewA[name] = clusterView(addr, pwA)
		}
		completedBackup(ns, "bk", "a", 2, replica, idsA)

		By("restoring under another name: while the restored nodes' claims are not ready, no slot is assigned and nothing replicates")
		newRestoredCluster(ns, "b", "bk", 2, 1)
		Eventually(func() map[string]string { return clusterNodeAddrs(f, ns, "b") }, 20*time.Second).Should(HaveLen(2))
		Consistently(func(g Gomega) {
			pw := clusterPassword(ns, "b")
			for name, addr := range clusterNodeAddrs(f, ns, "b") {
				g.Expect(clusterInfo(addr, pw, "cluster_slots_assigned")).To(Equal("0"), "slots assigned on %s", name)
				g.Expect(serverRole(addr, getNode(ns, name))).To(Equal("master"), "%s replicates", name)
			}
			c := status.Get(getCluster(ns, "b").Status.Conditions, valkeyv1.ConditionRestored)
			g.Expect(c).To(And(Not(BeNil()), HaveField("Reason", valkeyv1.ReasonRestoring)))
		}, 4*time.Second).Should(Succeed())
		f.publishSnapshots(snapshots)
		Eventually(clusterReady(ns, "b"), formTimeout).Should(Succeed())
		Eventually(restoredCondition(ns, "b"), 20*time.Second).Should(And(Not(BeNil()),
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", valkeyv1.ReasonRestored), HaveField("Message", ContainSubstring("bk"))))
		Eventually(func() int { return eventsWithReason(ns, valkeyv1.EventRestored) }, 20*time.Second).Should(BeNumerically(">=", 1))

		By("each shard's restored node is the one of the backup's replica index; the snapshot name is dropped once restored")
		Eventually(func(g Gomega) {
			for s := int32(0); s < 2; s++ {
				for i := int32(0); i <= 1; i++ {
					n := getNode(ns, valkeyv1.NodeName("b", s, i))
					if i == replica[s] {
						g.Expect(n.Spec.Restore).To(Equal(&valkeyv1.NodeRestore{Backup: "bk", Identity: valkeyv1.RestoreFresh}))
					} else {
						g.Expect(n.Spec.Restore).To(BeNil())
					}
				}
			}
		}, 20*time.Second).Should(Succeed())

		By("every key reads back through the restored cluster, whose nodes know none of the old ones")
		pwB := clusterPassword(ns, "b")
		addrsB := clusterNodeAddrs(f, ns, "b")
		Expect(addrsB).To(HaveLen(4))
		Eventually(func() int { return readKeysAt(addrsB, pwB, keys) }, 30*time.Second).Should(Equal(keys))
		for name, addr := range addrsB {
			lines, err := clusterNodes(addr, pwB)
			Expect(err).NotTo(HaveOccurred())
			Expect(lines).To(HaveLen(4), "%s knows %d nodes", name, len(lines))
			for _, l := range lines {
				for old, id := range idsA {
					if strings.HasPrefix(old, "a-") {
						Expect(l.id).NotTo(Equal(id), "%s knows %s of the backed-up cluster", name, old)
					}
				}
			}
		}

		By("the backed-up cluster is as it was")
		for name, addr := range addrsA {
			Expect(clusterView(addr, pwA)).To(Equal(viewA[name]), "the view of %s changed", name)
		}
		Expect(readKeysAt(addrsA, pwA, keys)).To(Equal(keys))
	})

	It("restores into the same name with the nodes' IDs", func() {
		const keys = 1000
		ns := newNamespace()
		f, pw := formCluster(ns, "c", 2, 1)
		writeKeys(f, pw, keys)
		replica := replicaIndexes(f, ns, "c", pw, 2, 1)
		for s := int32(0); s < 2; s++ {
			f.takeSnapshot(valkeyv1.NodeName("c", s, replica[s]), valkeyv1.SnapshotName("bk", s), pw)
		}
		ids := nodeIDs(ns)
		completedBackup(ns, "bk", "c", 2, replica, ids)

		By("deleting the cluster, its nodes and Secrets (envtest has no garbage collector); the deletion of the node at shard 0's restored place is held")
		held := getNode(ns, valkeyv1.NodeName("c", 0, replica[0]))
		controllerutil.AddFinalizer(held, holdFinalizer)
		Expect(k8s.Update(context.Background(), held)).To(Succeed())
		old := getCluster(ns, "c")
		Expect(k8s.Delete(context.Background(), old)).To(Succeed())
		for _, n := range listNodes(ns) {
			Expect(k8s.Delete(context.Background(), &n)).To(Succeed())
		}
		Eventually(func() []string {
			collectGarbage(ns, old.UID)
			return f.addrs()
		}, drainAfterClusterDeletion).Should(BeEmpty(), func() string { return drainReport(ns) })
		for _, name := range []string{valkeyv1.PasswordSecretName("c"), valkeyv1.OperatorSecretName("c"), valkeyv1.ACLSecretName("c")} {
			Expect(k8s.Delete(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})).To(Succeed())
		}

		By("restoring as c: until shard 0's restored node exists, nothing replicates and only the restored nodes own slots (those of their keys)")
		newRestoredCluster(ns, "c", "bk", 2, 1)
		Eventually(func() map[string]string { return clusterNodeAddrs(f, ns, "c") }, 20*time.Second).Should(HaveLen(3))
		Consistently(func(g Gomega) {
			cpw := clusterPassword(ns, "c")
			for name, addr := range clusterNodeAddrs(f, ns, "c") {
				n := getNode(ns, name)
				g.Expect(serverRole(addr, n)).To(Equal("master"), "%s replicates", name)
				lines, err := clusterNodes(addr, cpw)
				g.Expect(err).NotTo(HaveOccurred())
				for _, l := range lines {
					if strings.Contains(l.flags, "myself") && n.Spec.Restore == nil {
						g.Expect(l.slots).To(BeZero(), "%s, not restored, was given slots", name)
					}
				}
			}
		}, 4*time.Second).Should(Succeed())
		held = getNode(ns, held.Name)
		controllerutil.RemoveFinalizer(held, holdFinalizer)
		Expect(k8s.Update(context.Background(), held)).To(Succeed())
		Eventually(clusterReady(ns, "c"), formTimeout).Should(Succeed())
		Eventually(restoredCondition(ns, "c"), 20*time.Second).Should(HaveField("Status", metav1.ConditionTrue))
		now := nodeIDs(ns)
		for s := int32(0); s < 2; s++ {
			name := valkeyv1.NodeName("c", s, replica[s])
			Expect(now[name]).To(Equal(ids[name]), "restored node %s keeps its node ID", name)
			Expect(getNode(ns, name).Spec.Restore).To(HaveField("Identity", valkeyv1.RestoreKeep))
		}
		Eventually(func() error { return checkHealthy(f, clusterPassword(ns, "c"), 2, 1) }, 30*time.Second).Should(Succeed())
		Eventually(func() int { return readKeysAt(clusterNodeAddrs(f, ns, "c"), clusterPassword(ns, "c"), keys) }, 30*time.Second).Should(Equal(keys))
	})

	DescribeTable("never reports Restored while the restored node is not on its snapshot's claim",
		func(adopted bool, reason, message string) {
			ns := newNamespace()
			f, pw := formPersistentCluster(ns, "o", 1, 0, false)
			node := valkeyv1.NodeName("o", 0, 0)
			addr := f.server(node).Addr()
			Expect(cmd(addr, pw, "SET", "k", "v1")).To(Equal("OK"))
			f.takeSnapshot(node, valkeyv1.SnapshotName("bk", 0), pw)
			completedBackup(ns, "bk", "o", 1, map[int32]int32{0: 0}, nodeIDs(ns))
			Expect(cmd(addr, pw, "SET", "k", "v2")).To(Equal("OK"))
			saved := intReply(addr, pw, "LASTSAVE")
			Eventually(func() int64 { return time.Now().Unix() }, 3*time.Second).Should(BeNumerically(">", saved),
				"LASTSAVE counts seconds: the next save is told apart only in a later second")
			kept := f.saveAndCopy(node, pw) // what the claim holds when the cluster goes

			By("deleting the cluster, its node and Secrets; its claim is retained")
			old := getCluster(ns, "o")
			Expect(k8s.Delete(context.Background(), old)).To(Succeed())
			for _, n := range listNodes(ns) {
				Expect(k8s.Delete(context.Background(), &n)).To(Succeed())
			}
			Eventually(func() []string {
				collectGarbage(ns, old.UID)
				return f.addrs()
			}, drainAfterClusterDeletion).Should(BeEmpty(), func() string { return drainReport(ns) })
			for _, name := range []string{valkeyv1.PasswordSecretName("o"), valkeyv1.OperatorSecretName("o"), valkeyv1.ACLSecretName("o")} {
				Expect(k8s.Delete(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})).To(Succeed())
			}
			f.retain(node, kept, adopted)

			By("restoring as o from bk: the retained claim is under the restored node's claim name")
			newRestoredCluster(ns, "o", "bk", 1, 0)
			Eventually(restoredCondition(ns, "o"), 30*time.Second).Should(And(Not(BeNil()),
				HaveField("Status", metav1.ConditionFalse), HaveField("Reason", reason), HaveField("Message", ContainSubstring(message))))
			Consistently(restoredCondition(ns, "o"), 5*time.Second).ShouldNot(HaveField("Status", metav1.ConditionTrue),
				"the node does not serve the backup's data: the restore must not be reported")
			if adopted {
				return // the claim is in use; the volume controller no longer adopts it (volumecontroller specs)
			}
			Eventually(func() int { return eventsWithReason(ns, valkeyv1.ReasonRestoreRefused) }, 20*time.Second).Should(BeNumerically(">=", 1))
			Expect(f.server(node)).To(BeNil(), "no pod starts on the retained claim")

			By("the user deletes the retained claim: the node starts on its snapshot, with the backup's data")
			f.forgetRetained(node)
			Eventually(restoredCondition(ns, "o"), formTimeout).Should(HaveField("Status", metav1.ConditionTrue))
			Eventually(clusterReady(ns, "o"), formTimeout).Should(Succeed())
			Expect(cmd(f.server(node).Addr(), clusterPassword(ns, "o"), "GET", "k")).To(Equal("v1"))
		},
		Entry("a retained claim, which the volume controller refuses (RestoreClaimExists)", false,
			valkeyv1.ReasonRestoreRefused, "VolumeReady=False (RestoreClaimExists)"),
		Entry("a claim the volume controller does not report as made from the snapshot (adopted, as before)", true,
			valkeyv1.ReasonRestoring, "does not report its claim as made from VolumeSnapshot bk-0"),
	)

	DescribeTable("refuses a restore it cannot do, with a condition and an event, and creates no node",
		func(setup func(ns string), reason, message string) {
			ns := newNamespace()
			setup(ns)
			newRestoredCluster(ns, "r", "bk", 2, 1)
			Eventually(restoredCondition(ns, "r"), 20*time.Second).Should(And(Not(BeNil()),
				HaveField("Status", metav1.ConditionFalse), HaveField("Reason", reason), HaveField("Message", ContainSubstring(message))))
			vc := getCluster(ns, "r")
			Expect(status.Get(vc.Status.Conditions, valkeyv1.ConditionReady)).To(And(HaveField("Status", metav1.ConditionFalse), HaveField("Reason", reason)))
			Expect(status.Get(vc.Status.Conditions, valkeyv1.ConditionProgressing)).To(And(HaveField("Status", metav1.ConditionTrue), HaveField("Reason", reason)))
			Eventually(func() int { return eventsWithReason(ns, reason) }, 20*time.Second).Should(BeNumerically(">=", 1))
			Consistently(func() int { return len(listNodes(ns)) }, 3*time.Second).Should(BeZero())

			By("a Completed backup of the right shard count lets the cluster start: its nodes are created, one per shard restored")
			var b valkeyv1.ValkeyBackup
			if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "bk"}, &b); err == nil {
				Expect(k8s.Delete(context.Background(), &b)).To(Succeed())
			}
			Eventually(func() error {
				return k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "bk"}, &b)
			}, 10*time.Second).ShouldNot(Succeed())
			backupWithStatus(ns, "bk", "old", valkeyv1.BackupCompleted, 2)
			Eventually(func() int { return len(listNodes(ns)) }, 20*time.Second).Should(Equal(4))
			restored := 0
			for _, n := range listNodes(ns) {
				if n.Spec.Restore != nil {
					restored++
					Expect(n.Spec.Restore).To(Equal(&valkeyv1.NodeRestore{Backup: "bk", SnapshotName: valkeyv1.SnapshotName("bk", n.Spec.Shard), Identity: valkeyv1.RestoreFresh}))
				}
			}
			Expect(restored).To(Equal(2))
			Eventually(restoredCondition(ns, "r"), 20*time.Second).Should(HaveField("Reason", valkeyv1.ReasonRestoring))
		},
		Entry("a missing backup", func(string) {}, valkeyv1.ReasonRestoreSourceMissing, "does not exist"),
		// Of a cluster that does not exist, a backup stays Pending (ClusterNotFound); one saving
		// would be failed by the backup controller.
		Entry("a backup in progress", func(ns string) { backupWithStatus(ns, "bk", "old", valkeyv1.BackupPending, 2) },
			valkeyv1.ReasonRestoreSourceIncomplete, "is Pending, not Completed"),
		Entry("a backup of another shard count", func(ns string) { backupWithStatus(ns, "bk", "old", valkeyv1.BackupCompleted, 3) },
			valkeyv1.ReasonRestoreRefused, "this cluster has 2 shards, the ValkeyBackup bk has 3"),
	)
})
