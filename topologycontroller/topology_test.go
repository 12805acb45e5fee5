package topologycontroller_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
	"valkey.io/operator/topologycontroller"
)

const formTimeout = 90 * time.Second

// newCluster creates a ValkeyCluster. It is sent unstructured so that replicas: 0 is kept
// (the typed field is omitempty and would be defaulted to 1).
func newCluster(ns, name string, shards, replicas int32) *valkeyv1.ValkeyCluster {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": valkeyv1.GroupVersion.String(),
		"kind":       "ValkeyCluster",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec":       map[string]any{"shards": int64(shards), "replicas": int64(replicas)},
	}}
	ExpectWithOffset(1, k8s.Create(context.Background(), u)).To(Succeed())
	vc := getCluster(ns, name)
	ExpectWithOffset(1, vc.Spec.Replicas).To(Equal(replicas))
	return vc
}

func getCluster(ns, name string) *valkeyv1.ValkeyCluster {
	var vc valkeyv1.ValkeyCluster
	ExpectWithOffset(1, k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &vc)).To(Succeed())
	return &vc
}

func clusterReady(ns, name string) func() error {
	return func() error {
		vc := getCluster(ns, name)
		c := status.Get(vc.Status.Conditions, valkeyv1.ConditionReady)
		if c == nil || c.Status != metav1.ConditionTrue || vc.Status.ObservedGeneration != vc.Generation {
			var nodes []string
			for _, n := range listNodes(ns) {
				j := status.Get(n.Status.Conditions, valkeyv1.ConditionClusterJoined)
				w := status.Get(n.Status.Conditions, valkeyv1.ConditionWorkloadReady)
				if j != nil && w != nil {
					nodes = append(nodes, fmt.Sprintf("%s joined=%s/%s(%s) workload=%s", n.Name, j.Status, j.Reason, j.Message, w.Status))
				}
			}
			p := status.Get(vc.Status.Conditions, valkeyv1.ConditionProgressing)
			return errorf("not ready: %+v; progressing: %+v; nodes: %s", c, p, strings.Join(nodes, ", "))
		}
		return nil
	}
}

func clusterPassword(ns, name string) string {
	var s corev1.Secret
	EventuallyWithOffset(1, func() error {
		return k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: valkeyv1.PasswordSecretName(name)}, &s)
	}, 20*time.Second).Should(Succeed())
	return string(s.Data[valkeyv1.DefaultPasswordKey])
}

// formCluster starts a fake workload in ns (its servers' config with the lines of config),
// creates the cluster and waits until it is ready and healthy. It returns the workload and
// the cluster's password.
func formCluster(ns, name string, shards, replicas int32, config ...string) (*fakeWorkload, string) {
	f := startFakeWorkload(ns, config...)
	DeferCleanup(f.stop)
	newCluster(ns, name, shards, replicas)
	pw := clusterPassword(ns, name)
	EventuallyWithOffset(1, clusterReady(ns, name), formTimeout).Should(Succeed())
	EventuallyWithOffset(1, func() error { return checkHealthy(f, pw, int(shards), int(replicas)) }, 30*time.Second).Should(Succeed())
	return f, pw
}

func listNodes(ns string) []valkeyv1.ValkeyNode {
	var list valkeyv1.ValkeyNodeList
	ExpectWithOffset(1, k8s.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
	return list.Items
}

func nodeIDs(ns string) map[string]string {
	ids := map[string]string{}
	for _, n := range listNodes(ns) {
		if n.Status.Topology != nil {
			ids[n.Name] = n.Status.Topology.NodeID
		}
	}
	return ids
}

func eventsWithReason(ns, reason string) int {
	var list eventsv1.EventList
	ExpectWithOffset(1, k8s.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
	n := 0
	for _, e := range list.Items {
		if e.Reason == reason {
			n++
		}
	}
	return n
}

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

// openSlotHalfway starts moving a slot with keys from src to dst and moves half its keys.
func openSlotHalfway(f *fakeWorkload, pw, srcNode, dstNode string) {
	src, dst := f.server(srcNode), f.server(dstNode)
	srcID, err := cmd(src.Addr(), pw, "CLUSTER", "MYID")
	Expect(err).NotTo(HaveOccurred())
	dstID, err := cmd(dst.Addr(), pw, "CLUSTER", "MYID")
	Expect(err).NotTo(HaveOccurred())
	c := single(src.Addr(), pw)
	defer c.Close()
	ctx := context.Background()
	for i := 0; i < 10000; i++ {
		slot, err := c.Do(ctx, c.B().ClusterKeyslot().Key(keyName(i)).Build()).AsInt64()
		Expect(err).NotTo(HaveOccurred())
		keys, err := c.Do(ctx, c.B().Arbitrary("CLUSTER", "GETKEYSINSLOT", strconv.FormatInt(slot, 10), "100").Build()).AsStrSlice()
		Expect(err).NotTo(HaveOccurred())
		if len(keys) < 2 {
			continue
		}
		s := strconv.FormatInt(slot, 10)
		_, err = cmd(dst.Addr(), pw, "CLUSTER", "SETSLOT", s, "IMPORTING", srcID)
		Expect(err).NotTo(HaveOccurred())
		_, err = cmd(src.Addr(), pw, "CLUSTER", "SETSLOT", s, "MIGRATING", dstID)
		Expect(err).NotTo(HaveOccurred())
		args := append([]string{"MIGRATE", dst.Host, strconv.Itoa(dst.Port), "", "0", "5000", "AUTH", pw, "KEYS"}, keys[:len(keys)/2]...)
		_, err = cmd(src.Addr(), pw, args...)
		Expect(err).NotTo(HaveOccurred())
		GinkgoWriter.Printf("slot %d left open with %d of %d keys moved\n", slot, len(keys)/2, len(keys))
		return
	}
	Fail("no slot with keys on " + srcNode)
}

// patchSpec merge-patches the cluster's spec (a typed update would drop replicas: 0).
func patchSpec(ns, name, spec string) {
	vc := &valkeyv1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	ExpectWithOffset(1, k8s.Patch(context.Background(), vc, client.RawPatch(types.MergePatchType, []byte(`{"spec":`+spec+`}`)))).To(Succeed())
}

func setShards(ns, name string, shards int32) {
	patchSpec(ns, name, fmt.Sprintf(`{"shards":%d}`, shards))
}

var _ = Describe("Topology controller", func() {

	It("forms a 3-shard × 1-replica cluster and copies later spec changes to every node", func() {
		ns := newNamespace()
		f := startFakeWorkload(ns)
		DeferCleanup(f.stop)
		vc := newCluster(ns, "c", 3, 1)
		pw := clusterPassword(ns, "c")

		Eventually(clusterReady(ns, "c"), formTimeout).Should(Succeed())
		Eventually(func() error { return checkHealthy(f, pw, 3, 1) }, 30*time.Second).Should(Succeed())

		nodes := listNodes(ns)
		Expect(nodes).To(HaveLen(6))
		primaries := 0
		for _, n := range nodes {
			Expect(metav1.IsControlledBy(&n, vc)).To(BeTrue(), n.Name)
			Expect(n.Labels).To(HaveKeyWithValue(valkeyv1.LabelCluster, "c"))
			Expect(n.Labels).To(HaveKeyWithValue(valkeyv1.LabelManagedBy, valkeyv1.ManagedByValue))
			Expect(n.Finalizers).NotTo(ContainElement(valkeyv1.PVCProtectionFinalizer), "%s has no volume to protect", n.Name)
			Expect(n.Spec.PasswordSecret).NotTo(BeNil())
			Expect(n.Spec.PasswordSecret.Name).To(Equal("c-auth"))
			Expect(status.IsCurrentTrue(&n, n.Status.Conditions, valkeyv1.ConditionClusterJoined)).To(BeTrue(), n.Name)
			Expect(n.Status.Topology).NotTo(BeNil())
			Expect(n.Status.Topology.NodeID).To(HaveLen(40))
			if n.Status.Topology.Role == valkeyv1.RolePrimary {
				primaries++
				Expect(n.Status.Topology.Slots).To(BeNumerically("~", 16384/3, 1))
			} else {
				Expect(n.Status.Topology.PrimaryID).NotTo(BeEmpty())
			}
		}
		Expect(primaries).To(Equal(3))
		vc = getCluster(ns, "c")
		Expect(vc.Status.ReadyShards).To(BeEquivalentTo(3))
		Expect(vc.Status.SlotsAssigned).To(BeEquivalentTo(16384))
		Expect(vc.Status.ReadyNodes).To(BeEquivalentTo(6))
		Expect(status.IsTrue(vc.Status.Conditions, valkeyv1.ConditionSlotsAssigned)).To(BeTrue())
		Expect(status.IsTrue(vc.Status.Conditions, valkeyv1.ConditionDegraded)).To(BeFalse())
		Eventually(func() int { return eventsWithReason(ns, "Meet") }, 10*time.Second).Should(BeNumerically(">=", 5))

		By("enabling persistence and then growing it on the cluster")
		patchSpec(ns, "c", `{"persistence":{"size":"1Gi"}}`)
		Eventually(func(g Gomega) {
			for _, n := range listNodes(ns) {
				g.Expect(n.Spec.Persistence).NotTo(BeNil(), n.Name)
			}
		}, 20*time.Second).Should(Succeed())
		patchSpec(ns, "c", `{"persistence":{"size":"2Gi"}}`)
		Eventually(func(g Gomega) {
			for _, n := range listNodes(ns) {
				g.Expect(n.Spec.Persistence).NotTo(BeNil(), n.Name)
				g.Expect(n.Spec.Persistence.Size.String()).To(Equal("2Gi"), n.Name)
			}
		}, 20*time.Second).Should(Succeed())
	})

	It("keeps node IDs across a full restart at new addresses and replaces the ID of a node that lost its data", func() {
		ns := newNamespace()
		f := startFakeWorkload(ns)
		DeferCleanup(f.stop)
		newCluster(ns, "c", 3, 1)
		pw := clusterPassword(ns, "c")
		Eventually(clusterReady(ns, "c"), formTimeout).Should(Succeed())
		Eventually(func() error { return checkHealthy(f, pw, 3, 1) }, 30*time.Second).Should(Succeed())
		writeKeys(f, pw, 1000)
		before := nodeIDs(ns)
		Expect(before).To(HaveLen(6))

		By("reporting every volume unhealthy: topology never waits on volume conditions")
		volume := status.Applier{Client: k8s, FieldManager: valkeyv1.FieldManagerVolume}
		for _, n := range listNodes(ns) {
			Expect(volume.ApplyNode(context.Background(), &n, status.VolumeShare{Conditions: []metav1.Condition{
				status.Condition(valkeyv1.ConditionVolumeReady, false, valkeyv1.ReasonClaimLost, "test"),
			}})).To(Succeed())
		}

		By("restarting every server at a new address with its data directory")
		var names []string
		for name := range before {
			names = append(names, name)
		}
		f.restart(names, false)
		Eventually(func() error { return checkHealthy(f, pw, 3, 1) }, formTimeout).Should(Succeed())
		Eventually(clusterReady(ns, "c"), 30*time.Second).Should(Succeed())
		Expect(nodeIDs(ns)).To(Equal(before))
		for _, a := range f.addrs() {
			lines, err := clusterNodes(a, pw)
			Expect(err).NotTo(HaveOccurred())
			for _, l := range lines {
				Expect(before).To(ContainElement(l.id))
			}
		}
		Expect(eventsWithReason(ns, "Forget")).To(BeZero())
		Expect(readKeys(f, pw, 1000)).To(Equal(1000))

		By("restarting a replica with an empty data directory")
		var replica string
		for _, n := range listNodes(ns) {
			if n.Status.Topology.Role == valkeyv1.RoleReplica {
				replica = n.Name
				break
			}
		}
		old := before[replica]
		f.restart([]string{replica}, true)
		Eventually(func(g Gomega) {
			n := getNode(ns, replica)
			g.Expect(n.Status.Topology.NodeID).NotTo(Equal(old))
			g.Expect(n.Status.Topology.Role).To(Equal(valkeyv1.RoleReplica))
			g.Expect(status.IsTrue(n.Status.Conditions, valkeyv1.ConditionClusterJoined)).To(BeTrue())
		}, formTimeout).Should(Succeed())
		Eventually(func(g Gomega) {
			for _, a := range f.addrs() {
				lines, err := clusterNodes(a, pw)
				g.Expect(err).NotTo(HaveOccurred())
				for _, l := range lines {
					g.Expect(l.id).NotTo(Equal(old), "old ID still known to %s", a)
				}
			}
		}, formTimeout).Should(Succeed())
		Eventually(func() error { return checkHealthy(f, pw, 3, 1) }, 30*time.Second).Should(Succeed())
		Eventually(func() int { return eventsWithReason(ns, "Forget") }, 10*time.Second).Should(BeNumerically(">=", 1))
		Expect(readKeys(f, pw, 1000)).To(Equal(1000))
	})

	It("approves rolls one node at a time, replicas first, primaries only after failover", func() {
		ns := newNamespace()
		f := startFakeWorkload(ns)
		DeferCleanup(f.stop)
		newCluster(ns, "c", 3, 1)
		pw := clusterPassword(ns, "c")
		Eventually(clusterReady(ns, "c"), formTimeout).Should(Succeed())
		Eventually(func() error { return checkHealthy(f, pw, 3, 1) }, 30*time.Second).Should(Succeed())
		writeKeys(f, pw, 1000)
		roles := map[string]valkeyv1.Role{}
		for _, n := range listNodes(ns) {
			roles[n.Name] = n.Status.Topology.Role
		}

		By("changing the image: every node's pod template changes")
		patchSpec(ns, "c", `{"image":"valkey/valkey:9.1.3"}`)
		Eventually(func(g Gomega) {
			_, approvals := f.stats()
			g.Expect(approvals).To(HaveLen(6))
			for _, n := range listNodes(ns) {
				c := status.Get(n.Status.Conditions, valkeyv1.ConditionRollApproved)
				g.Expect(c).NotTo(BeNil())
				g.Expect(c.Reason).To(Equal(valkeyv1.ReasonNotRequested), n.Name)
			}
		}, 3*time.Minute).Should(Succeed())
		Eventually(clusterReady(ns, "c"), 30*time.Second).Should(Succeed())
		Eventually(func() error { return checkHealthy(f, pw, 3, 1) }, 30*time.Second).Should(Succeed())

		maxApproved, approvals := f.stats()
		Expect(maxApproved).To(Equal(1), "two nodes of one cluster were approved at once")
		for i, a := range approvals {
			GinkgoWriter.Printf("approval %d: %s %s (role %s)\n", i, a.node, a.reason, a.role)
			if i < 3 {
				Expect(roles[a.node]).To(Equal(valkeyv1.RoleReplica), "replicas roll first")
				Expect(a.reason).To(Equal(valkeyv1.ReasonApproved))
			} else {
				Expect(roles[a.node]).To(Equal(valkeyv1.RolePrimary))
				Expect(a.reason).To(Equal(valkeyv1.ReasonFailedOver))
				Expect(a.role).To(Equal("slave"), "a primary is failed over before it is approved")
			}
		}
		Expect(readKeys(f, pw, 1000)).To(Equal(1000))
	})

	It("holds a primary's roll while a replica's roll waits for its claim, so the replica still goes first", func() {
		ns := newNamespace()
		f := startFakeWorkload(ns)
		DeferCleanup(f.stop)
		newCluster(ns, "w", 1, 1)
		pw := clusterPassword(ns, "w")
		Eventually(clusterReady(ns, "w"), formTimeout).Should(Succeed())
		Eventually(func() error { return checkHealthy(f, pw, 1, 1) }, 30*time.Second).Should(Succeed())
		primary, replica := valkeyv1.NodeName("w", 0, 0), valkeyv1.NodeName("w", 0, 1)
		Expect(getNode(ns, primary).Status.Topology.Role).To(Equal(valkeyv1.RolePrimary))

		f.setWaitVolume(replica, true)
		patchSpec(ns, "w", `{"image":"valkey/valkey:9.1.3"}`)
		Eventually(func(g Gomega) {
			c := status.Get(getNode(ns, primary).Status.Conditions, valkeyv1.ConditionRollApproved)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(valkeyv1.ReasonWaitingForTurn))
			g.Expect(c.Message).To(ContainSubstring("waiting for the claim of " + replica))
		}, 30*time.Second).Should(Succeed())
		Consistently(func() int { _, a := f.stats(); return len(a) }, 3*time.Second).Should(BeZero(), "no approval while the replica waits")

		f.setWaitVolume(replica, false)
		Eventually(func() int { _, a := f.stats(); return len(a) }, 2*time.Minute).Should(Equal(2))
		_, approvals := f.stats()
		Expect(approvals[0].node).To(Equal(replica), "the replica rolls first")
		Expect(approvals[1].node).To(Equal(primary))
		Expect(approvals[1].reason).To(Equal(valkeyv1.ReasonFailedOver))
		Eventually(clusterReady(ns, "w"), 60*time.Second).Should(Succeed())
	})

	It("rolls primaries without replica one at a time with a clear status, and gives a lost node's slots to its successor", func() {
		ns := newNamespace()
		f := startFakeWorkload(ns)
		DeferCleanup(f.stop)
		newCluster(ns, "c", 3, 0)
		pw := clusterPassword(ns, "c")
		Eventually(clusterReady(ns, "c"), formTimeout).Should(Succeed())
		Eventually(func() error { return checkHealthy(f, pw, 3, 0) }, 30*time.Second).Should(Succeed())
		before := nodeIDs(ns)

		By("changing the template while every /data is an emptyDir (as when persistence is added)")
		var names []string
		for name := range before {
			names = append(names, name)
		}
		f.loseDataOnRestart(names...)
		patchSpec(ns, "c", `{"image":"valkey/valkey:9.1.3"}`)
		sawDegraded := false
		Eventually(func(g Gomega) {
			if status.IsTrue(getCluster(ns, "c").Status.Conditions, valkeyv1.ConditionDegraded) {
				sawDegraded = true
			}
			_, approvals := f.stats()
			g.Expect(approvals).To(HaveLen(3))
			g.Expect(checkHealthy(f, pw, 3, 0)).To(Succeed())
			g.Expect(clusterReady(ns, "c")()).To(Succeed())
		}, 3*time.Minute, 100*time.Millisecond).Should(Succeed())
		maxApproved, approvals := f.stats()
		Expect(maxApproved).To(Equal(1))
		for _, a := range approvals {
			Expect(a.reason).To(Equal(valkeyv1.ReasonApprovedNoReplica), a.node)
		}
		Expect(sawDegraded).To(BeTrue(), "the cluster never reported Degraded while a primary without replica restarted")
		Eventually(func() int { return eventsWithReason(ns, "RollWithoutReplica") }, 10*time.Second).Should(BeNumerically(">=", 3))
		Eventually(func() int { return eventsWithReason(ns, "SlotsReassigned") }, 10*time.Second).Should(BeNumerically(">=", 3))
		after := nodeIDs(ns)
		for name, id := range before {
			Expect(after[name]).NotTo(Equal(id), "%s kept its ID with an empty /data", name)
		}
	})

	It("scales 3 → 4 → 3 shards with 10,000 keys and loses none", func() {
		ns := newNamespace()
		f := startFakeWorkload(ns)
		DeferCleanup(f.stop)
		newCluster(ns, "c", 3, 1)
		pw := clusterPassword(ns, "c")
		Eventually(clusterReady(ns, "c"), formTimeout).Should(Succeed())
		Eventually(func() error { return checkHealthy(f, pw, 3, 1) }, 30*time.Second).Should(Succeed())
		writeKeys(f, pw, 10000)

		By("scaling out to 4 shards, reading every key while slots move")
		setShards(ns, "c", 4)
		minRead, rounds := 10000, 0
		Eventually(func() error {
			if n := readKeys(f, pw, 10000); n < minRead {
				minRead = n
			}
			rounds++
			return checkHealthy(f, pw, 4, 1)
		}, 3*time.Minute).Should(Succeed())
		GinkgoWriter.Printf("during scale-out: %d full reads, fewest keys read %d\n", rounds, minRead)
		Expect(minRead).To(Equal(10000), "keys unreadable during the migration")
		Eventually(clusterReady(ns, "c"), 30*time.Second).Should(Succeed())
		Expect(readKeys(f, pw, 10000)).To(Equal(10000))
		Eventually(func() int { return eventsWithReason(ns, "Migrating") }, 10*time.Second).Should(BeNumerically(">=", 1))
		if n := atomicImports(f.server(valkeyv1.NodeName("c", 3, 0)).Addr(), pw); n >= 0 {
			Expect(n).To(BeNumerically(">=", 1), "a server that migrates atomically took its slots by CLUSTER MIGRATESLOTS")
		}

		By("scaling in to 3 shards, reading every key while slots move")
		setShards(ns, "c", 3)
		minRead, rounds = 10000, 0
		Eventually(func() error {
			if n := readKeys(f, pw, 10000); n < minRead {
				minRead = n
			}
			rounds++
			return checkHealthy(f, pw, 3, 1)
		}, 3*time.Minute).Should(Succeed())
		GinkgoWriter.Printf("during scale-in: %d full reads, fewest keys read %d\n", rounds, minRead)
		Expect(minRead).To(Equal(10000), "keys unreadable during the migration")
		Eventually(clusterReady(ns, "c"), 30*time.Second).Should(Succeed())
		Expect(listNodes(ns)).To(HaveLen(6))
		for _, n := range listNodes(ns) {
			Expect(n.Spec.Shard).To(BeNumerically("<", 3))
		}
		Expect(readKeys(f, pw, 10000)).To(Equal(10000))
	})

	It("reports Drained=False while a deleted node owns slots, True once they have moved", func() {
		ns := newNamespace()
		f := startFakeWorkload(ns)
		DeferCleanup(f.stop)
		newCluster(ns, "c", 3, 0)
		pw := clusterPassword(ns, "c")
		Eventually(clusterReady(ns, "c"), formTimeout).Should(Succeed())
		Eventually(func() error { return checkHealthy(f, pw, 3, 0) }, 30*time.Second).Should(Succeed())
		writeKeys(f, pw, 2000)

		name := valkeyv1.NodeName("c", 1, 0)
		n := getNode(ns, name)
		id := n.Status.Topology.NodeID
		Eventually(func() error { return k8s.Update(context.Background(), getNodeWithFinalizer(ns, name)) }).Should(Succeed()) // as the volume controller would
		Expect(k8s.Delete(context.Background(), n)).To(Succeed())

		other := f.server(valkeyv1.NodeName("c", 0, 0)).Addr()
		sawFalse := false
		Eventually(func(g Gomega) {
			n := &valkeyv1.ValkeyNode{}
			err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, n)
			g.Expect(err).NotTo(HaveOccurred())
			c := status.Get(n.Status.Conditions, valkeyv1.ConditionDrained)
			g.Expect(c).NotTo(BeNil())
			lines, err := clusterNodes(other, pw)
			g.Expect(err).NotTo(HaveOccurred())
			owned := 0
			for _, l := range lines {
				if l.id == id {
					owned = l.slots
				}
			}
			if c.Status == metav1.ConditionFalse {
				Expect(c.Reason).To(Equal(valkeyv1.ReasonMigratingSlots))
				sawFalse = true
			}
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			Expect(owned).To(BeZero(), "Drained=True while the node still owns slots")
			Expect(c.Reason).To(Equal(valkeyv1.ReasonNoSlots))
		}, 2*time.Minute, 50*time.Millisecond).Should(Succeed())
		Expect(sawFalse).To(BeTrue(), "Drained was never False while the node owned slots")

		By("the node is recreated, rejoins empty and gets its share back")
		Eventually(func() error { return checkHealthy(f, pw, 3, 0) }, 3*time.Minute).Should(Succeed())
		Eventually(clusterReady(ns, "c"), 30*time.Second).Should(Succeed())
		Expect(getNode(ns, name).Status.Topology.NodeID).NotTo(Equal(id))
		Expect(readKeys(f, pw, 2000)).To(Equal(2000))
	})

	It("drains a deleted primary that has a replica by failing over to it", func() {
		ns := newNamespace()
		f := startFakeWorkload(ns)
		DeferCleanup(f.stop)
		newCluster(ns, "c", 1, 1)
		pw := clusterPassword(ns, "c")
		Eventually(clusterReady(ns, "c"), formTimeout).Should(Succeed())
		Eventually(func() error { return checkHealthy(f, pw, 1, 1) }, 30*time.Second).Should(Succeed())
		writeKeys(f, pw, 1000)

		name := valkeyv1.NodeName("c", 0, 0)
		Expect(getNode(ns, name).Status.Topology.Role).To(Equal(valkeyv1.RolePrimary))
		Eventually(func() error { return k8s.Update(context.Background(), getNodeWithFinalizer(ns, name)) }).Should(Succeed())
		Expect(k8s.Delete(context.Background(), getNode(ns, name))).To(Succeed())
		Eventually(func(g Gomega) {
			n := getNode(ns, valkeyv1.NodeName("c", 0, 1))
			g.Expect(n.Status.Topology.Role).To(Equal(valkeyv1.RolePrimary))
			g.Expect(n.Status.Topology.Slots).To(BeEquivalentTo(16384))
		}, formTimeout).Should(Succeed())
		Eventually(func() int { return eventsWithReason(ns, "FailedOver") }, 10*time.Second).Should(BeNumerically(">=", 1))

		By("the node is recreated and rejoins as the replica")
		Eventually(func() error { return checkHealthy(f, pw, 1, 1) }, 2*time.Minute).Should(Succeed())
		Eventually(clusterReady(ns, "c"), 30*time.Second).Should(Succeed())
		Expect(getNode(ns, name).Status.Topology.Role).To(Equal(valkeyv1.RoleReplica))
		Expect(readKeys(f, pw, 1000)).To(Equal(1000))
	})

	It("finishes a slot migration after the controller is killed in the middle of it", func() {
		ns := newNamespace()
		f := startFakeWorkload(ns)
		DeferCleanup(f.stop)
		// Small key-by-key migration rounds so that the controller is surely stopped in the
		// middle (an atomic migration runs on the servers and is over at once).
		slow := testOptions
		slow.MigrationSlotsPerReconcile = 8
		slow.MigrationMode = topologycontroller.MigrationKeys
		mgr.stop()
		mgr = startManager(slow)
		DeferCleanup(func() {
			mgr.stop()
			mgr = startManager(testOptions)
		})
		newCluster(ns, "c", 2, 0)
		pw := clusterPassword(ns, "c")
		Eventually(clusterReady(ns, "c"), formTimeout).Should(Succeed())
		Eventually(func() error { return checkHealthy(f, pw, 2, 0) }, 30*time.Second).Should(Succeed())
		writeKeys(f, pw, 10000)

		setShards(ns, "c", 3)
		target := valkeyv1.NodeName("c", 2, 0)
		Eventually(func() int {
			s := f.server(target)
			if s == nil {
				return 0
			}
			lines, err := clusterNodes(s.Addr(), pw)
			if err != nil {
				return 0
			}
			for _, l := range lines {
				if strings.Contains(l.flags, "myself") {
					return l.slots
				}
			}
			return 0
		}, formTimeout, 20*time.Millisecond).Should(BeNumerically(">", 200))
		mgr.stop()

		moved := 0
		open := false
		for _, a := range f.addrs() {
			lines, err := clusterNodes(a, pw)
			Expect(err).NotTo(HaveOccurred())
			for _, l := range lines {
				if strings.Contains(l.flags, "myself") {
					open = open || l.open
					if a == f.server(target).Addr() {
						moved = l.slots
					}
				}
			}
		}
		GinkgoWriter.Printf("controller stopped with %d of 5461 slots moved, slot open: %v\n", moved, open)
		if !open {
			By("leaving a slot half migrated, as a kill between two MIGRATE batches would")
			openSlotHalfway(f, pw, valkeyv1.NodeName("c", 0, 0), target)
		}
		Expect(moved).To(BeNumerically("<", 5461), "the migration finished before the controller was stopped")

		By("restarting the controller")
		mgr = startManager(testOptions)
		Eventually(func() error { return checkHealthy(f, pw, 3, 0) }, 3*time.Minute).Should(Succeed())
		Eventually(clusterReady(ns, "c"), 30*time.Second).Should(Succeed())
		Expect(readKeys(f, pw, 10000)).To(Equal(10000))
	})
})

var _ = Describe("Nodes without a live cluster", func() {
	It("reports Drained=True ClusterDeleting when the cluster is gone and NotInCluster for a lone node", func() {
		ns := newNamespace()
		f := startFakeWorkload(ns)
		DeferCleanup(f.stop)
		newCluster(ns, "gone", 1, 0)
		pw := clusterPassword(ns, "gone")
		Eventually(clusterReady(ns, "gone"), formTimeout).Should(Succeed())
		Expect(pw).NotTo(BeEmpty())

		name := valkeyv1.NodeName("gone", 0, 0)
		Eventually(func() error { return k8s.Update(context.Background(), getNodeWithFinalizer(ns, name)) }).Should(Succeed()) // the volume controller's
		gone := getCluster(ns, "gone")
		Expect(k8s.Delete(context.Background(), gone)).To(Succeed())
		// Envtest has no garbage collector: delete the owned node as it would.
		Expect(k8s.Delete(context.Background(), getNode(ns, name))).To(Succeed())
		Eventually(func(g Gomega) {
			collectGarbage(ns, gone.UID)
			n := &valkeyv1.ValkeyNode{}
			err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, n)
			if err == nil {
				c := status.Get(n.Status.Conditions, valkeyv1.ConditionDrained)
				g.Expect(c).NotTo(BeNil())
				g.Expect(c.Reason).To(Equal(valkeyv1.ReasonClusterDeleting))
			}
			// The fake removes the finalizer once Drained=True: then the node is gone.
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
		}, 30*time.Second).Should(Succeed())

		lone := &valkeyv1.ValkeyNode{ObjectMeta: metav1.ObjectMeta{Name: "lone", Namespace: ns}}
		Expect(k8s.Create(context.Background(), lone)).To(Succeed())
		Eventually(func(g Gomega) {
			n := getNode(ns, "lone")
			c := status.Get(n.Status.Conditions, valkeyv1.ConditionClusterJoined)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(valkeyv1.ReasonNotInCluster))
		}, 30*time.Second).Should(Succeed())
		Eventually(func() error { return k8s.Update(context.Background(), getNodeWithFinalizer(ns, "lone")) }).Should(Succeed())
		Expect(k8s.Delete(context.Background(), getNode(ns, "lone"))).To(Succeed())
		Eventually(func() bool {
			err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "lone"}, &valkeyv1.ValkeyNode{})
			return apierrors.IsNotFound(err)
		}, 30*time.Second).Should(BeTrue(), "Drained=True NotInCluster lets the finalizer go")
	})
})

func getNodeWithFinalizer(ns, name string) *valkeyv1.ValkeyNode {
	n := getNode(ns, name)
	controllerutil.AddFinalizer(n, valkeyv1.PVCProtectionFinalizer)
	return n
}

var _ = Describe("The password Secret", func() {
	readyCondition := func(ns, name string) func() *metav1.Condition {
		return func() *metav1.Condition {
			return status.Get(getCluster(ns, name).Status.Conditions, valkeyv1.ConditionReady)
		}
	}
	haveReason := func(reason string) OmegaMatcher {
		return And(Not(BeNil()), HaveField("Status", metav1.ConditionFalse), HaveField("Reason", reason))
	}
	secret := func(ns, name, key, value string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string][]byte{key: []byte(value)}}
	}

	It("reports a named Secret that is missing or has no value, and starts once it is right", func() {
		ns := newNamespace()
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": valkeyv1.GroupVersion.String(),
			"kind":       "ValkeyCluster",
			"metadata":   map[string]any{"name": "mine", "namespace": ns},
			"spec":       map[string]any{"shards": int64(1), "replicas": int64(0), "passwordSecret": map[string]any{"name": "my-password", "key": "pw"}},
		}}
		Expect(k8s.Create(context.Background(), u)).To(Succeed())
		Eventually(readyCondition(ns, "mine"), 20*time.Second).Should(And(
			haveReason(valkeyv1.ReasonPasswordSecretMissing), HaveField("Message", ContainSubstring("my-password"))))
		Eventually(func() int { return eventsWithReason(ns, valkeyv1.ReasonPasswordSecretMissing) }, 20*time.Second).Should(BeNumerically(">=", 1))
		Expect(listNodes(ns)).To(BeEmpty(), "no node starts without its password")

		Expect(k8s.Create(context.Background(), secret(ns, "my-password", "other", "x"))).To(Succeed())
		Eventually(readyCondition(ns, "mine"), 30*time.Second).Should(And(
			haveReason(valkeyv1.ReasonPasswordKeyMissing), HaveField("Message", ContainSubstring(`"pw"`))))
		Expect(listNodes(ns)).To(BeEmpty())

		s := secret(ns, "my-password", "pw", "s3cret")
		Expect(k8s.Update(context.Background(), s)).To(Succeed())
		Eventually(func() int { return len(listNodes(ns)) }, 30*time.Second).Should(Equal(1))
		Eventually(readyCondition(ns, "mine"), 10*time.Second).Should(HaveField("Reason", Not(BeElementOf(valkeyv1.ReasonPasswordSecretMissing, valkeyv1.ReasonPasswordKeyMissing))))
		Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: valkeyv1.PasswordSecretName("mine")}, &corev1.Secret{})).
			To(Satisfy(apierrors.IsNotFound), "no password is generated when one is named")
	})

	It("does not generate a new password when the generated Secret is deleted under running nodes", func() {
		ns := newNamespace()
		newCluster(ns, "gen", 1, 0)
		pw := clusterPassword(ns, "gen")
		Eventually(func() int { return len(listNodes(ns)) }, 20*time.Second).Should(Equal(1))

		key := client.ObjectKey{Namespace: ns, Name: valkeyv1.PasswordSecretName("gen")}
		Expect(k8s.Delete(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name}})).To(Succeed())
		Eventually(readyCondition(ns, "gen"), 20*time.Second).Should(And(
			haveReason(valkeyv1.ReasonPasswordSecretMissing), HaveField("Message", ContainSubstring(key.Name))))
		Eventually(func() int { return eventsWithReason(ns, valkeyv1.ReasonPasswordSecretMissing) }, 20*time.Second).Should(BeNumerically(">=", 1))
		Consistently(func() error { return k8s.Get(context.Background(), key, &corev1.Secret{}) }, 12*time.Second).
			Should(Satisfy(apierrors.IsNotFound), "the old password is not replaced by a new one")

		Expect(k8s.Create(context.Background(), secret(ns, key.Name, valkeyv1.DefaultPasswordKey, pw))).To(Succeed())
		Eventually(readyCondition(ns, "gen"), 30*time.Second).Should(HaveField("Reason", Not(Equal(valkeyv1.ReasonPasswordSecretMissing))))
	})
})

// atomicImports counts the finished atomic slot imports (CLUSTER GETSLOTMIGRATIONS) of the
// server at addr; -1 when the server has no atomic slot migration (Redis, Valkey before 9).
func atomicImports(addr, pw string) int {
	c := single(addr, pw)
	defer c.Close()
	jobs, err := c.Do(context.Background(), c.B().Arbitrary("CLUSTER", "GETSLOTMIGRATIONS").Build()).ToArray()
	if err != nil {
		return -1
	}
	n := 0
	for i := range jobs {
		if m, err := jobs[i].AsStrMap(); err == nil && m["operation"] == "IMPORT" && m["state"] == "success" {
			n++
		}
	}
	return n
}
