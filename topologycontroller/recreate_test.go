package topologycontroller_test

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/valkey-io/valkey-go"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
	"valkey.io/operator/test/valkeyserver"
)

// down stops a node's server as a crashed pod would (WorkloadReady=False); up starts it
// again at a new address with its data directory.
func (f *fakeWorkload) down(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	Expect(f.stopLocked(context.Background(), getNode(f.ns, name))).To(Succeed())
}

func (f *fakeWorkload) up(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := getNode(f.ns, name)
	Expect(f.startLocked(context.Background(), n)).To(Succeed())
	Expect(f.report(context.Background(), n, true, f.srv[name].Host)).To(Succeed())
}

// dbSize is the number of keys of the server at addr.
func dbSize(addr, pw string) int {
	c := single(addr, pw)
	defer c.Close()
	n, err := c.Do(context.Background(), c.B().Dbsize().Build()).AsInt64()
	if err != nil {
		return -1
	}
	return int(n)
}

// joinedReason is the reason of a node's ClusterJoined.
func joinedReason(ns, name string) func() string {
	return func() string {
		c := status.Get(getNode(ns, name).Status.Conditions, valkeyv1.ConditionClusterJoined)
		if c == nil {
			return ""
		}
		return c.Reason
	}
}

// drained is the Drained condition of the node with that UID; an error once it is gone.
func drained(ns, name string, uid types.UID) func() (*metav1.Condition, error) {
	return func() (*metav1.Condition, error) {
		var n valkeyv1.ValkeyNode
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &n); err != nil {
			return nil, err
		}
		if n.UID != uid {
			return nil, apierrors.NewNotFound(valkeyv1.GroupVersion.WithResource("valkeynodes").GroupResource(), name+" (this UID: released and replaced)")
		}
		return status.Get(n.Status.Conditions, valkeyv1.ConditionDrained), nil
	}
}

// drainAfterClusterDeletion bounds the drain of the nodes of a deleted cluster (Drained=True
// ClusterDeleting, then the pvc-protection finalizer released). It is seconds here; the
// waits that once ran out under load were a round of the cluster in flight at its deletion
// creating a node again after the test deleted it (see collectGarbage).
const drainAfterClusterDeletion = 60 * time.Second

// collectGarbage deletes, as Kubernetes' garbage collector would, the ValkeyNodes of ns
// controlled by the ValkeyCluster of UID owner, which is gone. Envtest runs no garbage
// collector, and a round of the cluster in flight when the test deleted it and its nodes
// may create a node again (it read the cluster before the deletion); nothing else would
// delete that node, and its fake server would run on.
func collectGarbage(ns string, owner types.UID) {
	for _, n := range listNodes(ns) {
		if ref := metav1.GetControllerOf(&n); ref != nil && ref.UID == owner && n.DeletionTimestamp.IsZero() {
			GinkgoWriter.Printf("deleting %s, created at %s for the ValkeyCluster %s that is gone\n", n.Name, n.CreationTimestamp.Format(time.RFC3339), owner)
			ExpectWithOffset(1, client.IgnoreNotFound(k8s.Delete(context.Background(), &n))).To(Succeed())
		}
	}
}

// drainReport says what the nodes left in ns show (a failed drain wait's message): each
// one's deletion, finalizers, topology conditions and status managers.
func drainReport(ns string) string {
	var b strings.Builder
	for _, n := range listNodes(ns) {
		fmt.Fprintf(&b, "\n%s deleting=%v finalizers=%v", n.Name, !n.DeletionTimestamp.IsZero(), n.Finalizers)
		for _, c := range n.Status.Conditions {
			fmt.Fprintf(&b, "\n  %s=%s %s: %s (gen %d, at %s)", c.Type, c.Status, c.Reason, c.Message, c.ObservedGeneration, c.LastTransitionTime.Format(time.RFC3339))
		}
		for _, m := range n.ManagedFields {
			fmt.Fprintf(&b, "\n  managed by %s %s %s at %s", m.Manager, m.Operation, m.Subresource, m.Time.Format(time.RFC3339))
		}
	}
	return b.String()
}

var _ = Describe("Re-creation and drain", func() {

	It("drains the nodes of a deleted cluster re-created under the same name, then creates the new nodes", func() {
		ns := newNamespace()
		f, _ := formCluster(ns, "c", 1, 1)
		old := getCluster(ns, "c")
		names := []string{valkeyv1.NodeName("c", 0, 0), valkeyv1.NodeName("c", 0, 1)}
		oldUIDs := map[string]types.UID{}
		for _, name := range names {
			Eventually(func() error { return k8s.Update(context.Background(), getNodeWithFinalizer(ns, name)) }).Should(Succeed()) // the volume controller's
			oldUIDs[name] = getNode(ns, name).UID
		}

		By("deleting and re-creating the cluster while the topology controller is stopped")
		mgr.stop()
		restarted := false
		DeferCleanup(func() {
			if !restarted {
				mgr = startManager(testOptions)
			}
		})
		Expect(k8s.Delete(context.Background(), old)).To(Succeed())
		// Envtest has no garbage collector: delete what the cluster owned as it would.
		for _, name := range names {
			Expect(k8s.Delete(context.Background(), getNode(ns, name))).To(Succeed())
		}
		for _, name := range []string{valkeyv1.PasswordSecretName("c"), valkeyv1.OperatorSecretName("c"), valkeyv1.ACLSecretName("c")} {
			Expect(k8s.Delete(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})).To(Succeed())
		}
		vc := newCluster(ns, "c", 1, 1)
		Expect(vc.UID).NotTo(Equal(old.UID))
		mgr = startManager(testOptions)
		restarted = true

		By("the old nodes are drained and go; the new cluster's nodes replace them")
		for _, name := range names {
			Eventually(func(g Gomega) {
				var n valkeyv1.ValkeyNode
				err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &n)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(n.UID).NotTo(Equal(oldUIDs[name]), "the old node %s is still there: %+v", name, n.Status.Conditions)
				g.Expect(metav1.IsControlledBy(&n, vc)).To(BeTrue())
			}, 60*time.Second).Should(Succeed())
		}
		pw := clusterPassword(ns, "c")
		Eventually(clusterReady(ns, "c"), formTimeout).Should(Succeed())
		Eventually(func() error { return checkHealthy(f, pw, 1, 1) }, 30*time.Second).Should(Succeed())
	})

	It("does not reuse the generated password Secret of an earlier cluster of the same name", func() {
		ns := newNamespace()
		old := newCluster(ns, "gen", 1, 0)
		oldPW := clusterPassword(ns, "gen")
		Eventually(func() int { return len(listNodes(ns)) }, 20*time.Second).Should(Equal(1))
		key := client.ObjectKey{Namespace: ns, Name: valkeyv1.PasswordSecretName("gen")}

		By("deleting the cluster; its Secret stays (garbage collection has not got to it yet)")
		Expect(k8s.Delete(context.Background(), old)).To(Succeed())
		Expect(k8s.Delete(context.Background(), getNode(ns, valkeyv1.NodeName("gen", 0, 0)))).To(Succeed())
		Eventually(func() int {
			collectGarbage(ns, old.UID)
			return len(listNodes(ns))
		}, drainAfterClusterDeletion).Should(BeZero(), func() string { return drainReport(ns) })
		vc := newCluster(ns, "gen", 1, 0)
		Eventually(func() *metav1.Condition {
			return status.Get(getCluster(ns, "gen").Status.Conditions, valkeyv1.ConditionReady)
		}, 20*time.Second).Should(And(Not(BeNil()),
			HaveField("Reason", valkeyv1.ReasonPasswordSecretNotOwned),
			HaveField("Message", ContainSubstring(string(old.UID)))))
		Eventually(func() int { return eventsWithReason(ns, valkeyv1.ReasonPasswordSecretNotOwned) }, 20*time.Second).Should(BeNumerically(">=", 1))
		Consistently(func() int { return len(listNodes(ns)) }, 3*time.Second).Should(BeZero(), "no node starts with another cluster's password")

		By("once the old Secrets are gone (garbage collection), new ones are generated for this cluster")
		for _, name := range []string{key.Name, valkeyv1.OperatorSecretName("gen"), valkeyv1.ACLSecretName("gen")} {
			Expect(k8s.Delete(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})).To(Succeed())
		}
		Eventually(func(g Gomega) {
			var s corev1.Secret
			g.Expect(k8s.Get(context.Background(), key, &s)).To(Succeed())
			g.Expect(metav1.IsControlledBy(&s, vc)).To(BeTrue())
			g.Expect(string(s.Data[valkeyv1.DefaultPasswordKey])).NotTo(Equal(oldPW))
		}, 30*time.Second).Should(Succeed())
		Eventually(func() int { return len(listNodes(ns)) }, 30*time.Second).Should(Equal(1))
	})

	It("never flushes a primary without slots whose keys the slots' owner does not hold", func() {
		ns := newNamespace()
		f, pw, p, r, slot, moved, restart := keysOnlyOnReplica(ns)
		replica := valkeyv1.NodeName("k", 0, 1)
		restart()

		Eventually(joinedReason(ns, replica), 30*time.Second).Should(Equal(valkeyv1.ReasonKeysNotElsewhere))
		Eventually(func() int { return eventsWithReason(ns, valkeyv1.EventKeysNotFlushed) }, 20*time.Second).Should(BeNumerically(">=", 1))
		Consistently(func() int { return dbSize(r.Addr(), pw) }, 3*testOptions.ResyncPeriod).Should(Equal(moved), "the only copy of the slot's keys was flushed")
		Expect(status.Get(getNode(ns, replica).Status.Conditions, valkeyv1.ConditionClusterJoined).Message).To(ContainSubstring(strconv.Itoa(slot)))

		By("once the owner holds the keys again (the user copied them back), the node is flushed and follows the primary")
		Expect(copySlotBack(r.Addr(), p.Addr(), pw, slot)).To(Equal(moved))
		Eventually(func() error { return checkHealthy(f, pw, 1, 1) }, formTimeout).Should(Succeed())
		Eventually(clusterReady(ns, "k"), 30*time.Second).Should(Succeed())
		Expect(readKeys(f, pw, 1000)).To(Equal(1000))
	})

	It("never flushes a primary without slots whose keys its slot's owner lacks, even when the owner holds as many other keys of the slot", func() {
		ns := newNamespace()
		f, pw, p, r, slot, moved, restart := keysOnlyOnReplica(ns)
		replica := valkeyv1.NodeName("k", 0, 1)

		By("the owner gets as many other keys of that slot: the counts match, the keys do not")
		other := keysOfSlot(p.Addr(), pw, slot, moved)
		for _, k := range other {
			_, err := cmd(p.Addr(), pw, "SET", k, "other")
			Expect(err).NotTo(HaveOccurred())
		}
		restart()

		Eventually(joinedReason(ns, replica), 30*time.Second).Should(Equal(valkeyv1.ReasonKeysNotElsewhere))
		Consistently(func() int { return dbSize(r.Addr(), pw) }, 3*testOptions.ResyncPeriod).Should(Equal(moved), "keys found nowhere else were flushed")

		By("once the owner holds them too, the node is flushed and follows the primary")
		Expect(copySlotBack(r.Addr(), p.Addr(), pw, slot)).To(Equal(moved))
		Eventually(func() error { return checkHealthy(f, pw, 1, 1) }, formTimeout).Should(Succeed())
		Expect(readKeys(f, pw, 1000)).To(Equal(1000))
	})

	It("does not report Drained=True for a replica whose primary is down", func() {
		replicaOfDownPrimaryStays(newNamespace(), 1, false)
	})

	It("does not report Drained=True for an unreachable replica whose primary is down too", func() {
		replicaOfDownPrimaryStays(newNamespace(), 2, true)
	})
})

// moveSlotKeys moves the keys of the first slot of key:0..9999 that holds some from the
// server at src (its owner) to the one at dst, which does not own it: dst imports them
// and the slot is made stable again. It returns the slot and the number of keys.
func moveSlotKeys(src, dst, pw string) (int, int) {
	c := single(src, pw)
	defer c.Close()
	ctx := context.Background()
	for i := 0; i < 10000; i++ {
		slot, err := c.Do(ctx, c.B().ClusterKeyslot().Key(keyName(i)).Build()).AsInt64()
		Expect(err).NotTo(HaveOccurred())
		s := strconv.FormatInt(slot, 10)
		keys, err := c.Do(ctx, c.B().Arbitrary("CLUSTER", "GETKEYSINSLOT", s, "1000").Build()).AsStrSlice()
		Expect(err).NotTo(HaveOccurred())
		if len(keys) == 0 {
			continue
		}
		srcID, err := cmd(src, pw, "CLUSTER", "MYID")
		Expect(err).NotTo(HaveOccurred())
		_, err = cmd(dst, pw, "CLUSTER", "SETSLOT", s, "IMPORTING", srcID)
		Expect(err).NotTo(HaveOccurred())
		Expect(c.Do(ctx, c.B().Arbitrary(migrateArgs(dst, pw, false, keys)...).Build()).Error()).NotTo(HaveOccurred())
		_, err = cmd(dst, pw, "CLUSTER", "SETSLOT", s, "STABLE")
		Expect(err).NotTo(HaveOccurred())
		return int(slot), len(keys)
	}
	Fail("no slot with keys on " + src)
	return 0, 0
}

// copySlotBack is what a user does to save keys a node holds of a slot it does not own
// (docs/contract.md): mark the slot importing on it so that ASKING reaches them, copy them
// to the owner at dst with MIGRATE COPY, and make the slot stable again. It returns the
// number of keys copied.
func copySlotBack(src, dst, pw string, slot int) int {
	s := strconv.Itoa(slot)
	dstID, err := cmd(dst, pw, "CLUSTER", "MYID")
	Expect(err).NotTo(HaveOccurred())
	_, err = cmd(src, pw, "CLUSTER", "SETSLOT", s, "IMPORTING", dstID)
	Expect(err).NotTo(HaveOccurred())
	c := single(src, pw)
	defer c.Close()
	ctx := context.Background()
	keys, err := c.Do(ctx, c.B().Arbitrary("CLUSTER", "GETKEYSINSLOT", s, "1000").Build()).AsStrSlice()
	Expect(err).NotTo(HaveOccurred())
	Expect(keys).NotTo(BeEmpty())
	for _, r := range c.DoMulti(ctx, c.B().Asking().Build(), c.B().Arbitrary(migrateArgs(dst, pw, true, keys)...).Build()) {
		Expect(r.Error()).NotTo(HaveOccurred())
	}
	_, err = cmd(src, pw, "CLUSTER", "SETSLOT", s, "STABLE")
	Expect(err).NotTo(HaveOccurred())
	return len(keys)
}

func migrateArgs(dst, pw string, keep bool, keys []string) []string {
	host, port, err := net.SplitHostPort(dst)
	Expect(err).NotTo(HaveOccurred())
	args := []string{"MIGRATE", host, port, "", "0", "5000"}
	if keep {
		args = append(args, "COPY")
	}
	return append(append(args, "AUTH", pw, "KEYS"), keys...)
}

// keysOnlyOnReplica forms a 1 × 1 cluster k in ns with 1,000 keys and, with the controller
// stopped, brings the replica back as a new primary without slots that holds the keys of one
// slot which its owner no longer has. The controller is started again by the caller
// (restart). It returns the fake workload, the password, the two servers, the slot and the
// number of its keys.
func keysOnlyOnReplica(ns string) (f *fakeWorkload, pw string, p, r *valkeyserver.Server, slot, moved int, restart func()) {
	f, pw = formCluster(ns, "k", 1, 1)
	writeKeys(f, pw, 1000)
	primary, replica := valkeyv1.NodeName("k", 0, 0), valkeyv1.NodeName("k", 0, 1)
	Expect(getNode(ns, primary).Status.Topology.Role).To(Equal(valkeyv1.RolePrimary))

	By("with the controller stopped, the replica comes back as a new primary holding keys of a slot its owner lost")
	mgr.stop()
	restarted := false
	DeferCleanup(func() {
		if !restarted {
			mgr = startManager(testOptions)
		}
	})
	f.restart([]string{replica}, true)
	p, r = f.server(primary), f.server(replica)
	_, err := cmd(r.Addr(), pw, "CLUSTER", "MEET", p.Host, strconv.Itoa(p.Port))
	Expect(err).NotTo(HaveOccurred())
	pID, err := cmd(p.Addr(), pw, "CLUSTER", "MYID")
	Expect(err).NotTo(HaveOccurred())
	Eventually(func() bool {
		lines, _ := clusterNodes(r.Addr(), pw)
		for _, l := range lines {
			if l.id == pID && !strings.Contains(l.flags, "handshake") {
				return l.slots == 16384 && clusterInfo(r.Addr(), pw, "cluster_state") == "ok"
			}
		}
		return false
	}, 20*time.Second).Should(BeTrue())
	slot, moved = moveSlotKeys(p.Addr(), r.Addr(), pw)
	GinkgoWriter.Printf("slot %d: %d keys now only on the replica\n", slot, moved)
	Expect(dbSize(r.Addr(), pw)).To(Equal(moved))
	restart = func() {
		mgr = startManager(testOptions)
		restarted = true
	}
	return f, pw, p, r, slot, moved, restart
}

// keysOfSlot are n key names that hash to slot, none of the key:N names: a hash tag of the
// slot is found among candidates asked in one pipeline.
func keysOfSlot(addr, pw string, slot, n int) []string {
	c := single(addr, pw)
	defer c.Close()
	const candidates = 200000 // none of the slot's among them: e^-12
	cmds := make(valkey.Commands, candidates)
	for i := range cmds {
		cmds[i] = c.B().ClusterKeyslot().Key("t" + strconv.Itoa(i)).Build()
	}
	for i, res := range c.DoMulti(context.Background(), cmds...) {
		got, err := res.AsInt64()
		Expect(err).NotTo(HaveOccurred())
		if int(got) != slot {
			continue
		}
		out := make([]string, n)
		for j := range out {
			out[j] = fmt.Sprintf("{t%d}:other:%d", i, j)
		}
		return out
	}
	Fail("no hash tag of slot " + strconv.Itoa(slot))
	return nil
}

// replicaOfDownPrimaryStays forms a cluster of shards × 1 with 500 keys, takes the primary of
// shard 0 down (and its replica too when replicaDown), deletes the replica's node and expects
// it kept with Drained=False, PrimaryDown (its copy may be the shard's only one); once the
// primary is back, the replica goes and no key is lost.
func replicaOfDownPrimaryStays(ns string, shards int32, replicaDown bool) {
	f, pw := formCluster(ns, "d", shards, 1)
	writeKeys(f, pw, 500)
	primary, replica := valkeyv1.NodeName("d", 0, 0), valkeyv1.NodeName("d", 0, 1)
	Expect(getNode(ns, primary).Status.Topology.Role).To(Equal(valkeyv1.RolePrimary))

	By("the primary's server goes down (the replica's too when replicaDown), then the replica's node is deleted")
	down := []string{primary}
	if replicaDown {
		down = append(down, replica)
	}
	for _, name := range down {
		f.down(name)
		Eventually(func() bool {
			return status.IsTrue(getNode(ns, name).Status.Conditions, valkeyv1.ConditionWorkloadReady)
		}).Should(BeFalse())
	}
	Eventually(func() error { return k8s.Update(context.Background(), getNodeWithFinalizer(ns, replica)) }).Should(Succeed())
	uid := getNode(ns, replica).UID
	Expect(k8s.Delete(context.Background(), getNode(ns, replica))).To(Succeed())
	Eventually(drained(ns, replica, uid), 20*time.Second).Should(And(Not(BeNil()),
		HaveField("Status", metav1.ConditionFalse), HaveField("Reason", valkeyv1.ReasonPrimaryDown)))
	// The fake removes the finalizer once Drained=True: the node would be gone.
	Consistently(drained(ns, replica, uid), 3*testOptions.ResyncPeriod).Should(HaveField("Status", metav1.ConditionFalse),
		"its copy may be the shard's only one")
	if !replicaDown {
		Expect(dbSize(f.server(replica).Addr(), pw)).To(Equal(500), "the replica still holds the shard's keys")
	}

	By("the primary comes back: the replica may go")
	f.up(primary)
	Eventually(func() bool {
		_, err := drained(ns, replica, uid)()
		return apierrors.IsNotFound(err)
	}, formTimeout).Should(BeTrue())
	Eventually(func() error { return checkHealthy(f, pw, int(shards), 1) }, formTimeout).Should(Succeed())
	Expect(readKeys(f, pw, 500)).To(Equal(500))
}
