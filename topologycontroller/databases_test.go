package topologycontroller_test

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/valkey-io/valkey-go"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// severalDatabases is the config of servers with 16 databases in cluster mode (Valkey 9).
const severalDatabases = "cluster-databases 16"

// otherDB is the database the specs below put keys in besides database 0.
const otherDB = 5

// needsClusterDatabases skips a spec on servers without databases in cluster mode.
func needsClusterDatabases() {
	if serverMajor() < 9 {
		Skip("cluster-databases needs Valkey 9")
	}
}

// inDB is a client of one server that works in database db.
func inDB(addr, pw string, db int) valkey.Client {
	c, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{addr}, Password: pw, SelectDB: db,
		ForceSingleClient: true, DisableCache: true, AlwaysRESP2: true, Dialer: net.Dialer{Timeout: time.Second}})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return c
}

// clusterInDB is a cluster-mode client of the test servers that works in database db.
func clusterInDB(f *fakeWorkload, pw string, db int) valkey.Client {
	c, err := valkey.NewClient(valkey.ClientOption{InitAddress: f.addrs(), Password: pw, SelectDB: db, DisableCache: true, Dialer: net.Dialer{Timeout: time.Second}})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return c
}

func dbKey(i int) string { return fmt.Sprintf("db%d:%d", otherDB, i) }

// writeDBKeys writes n keys db5:0… in database otherDB through the cluster.
func writeDBKeys(f *fakeWorkload, pw string, n int) {
	c := clusterInDB(f, pw, otherDB)
	defer c.Close()
	cmds := make(valkey.Commands, n)
	for i := range cmds {
		cmds[i] = c.B().Set().Key(dbKey(i)).Value("v" + strconv.Itoa(i)).Build()
	}
	for _, r := range c.DoMulti(context.Background(), cmds...) {
		ExpectWithOffset(1, r.Error()).NotTo(HaveOccurred())
	}
}

// readDBKeys is how many of the n keys of database otherDB read back with their value
// through the cluster (each from its slot's owner).
func readDBKeys(f *fakeWorkload, pw string, n int) int {
	c := clusterInDB(f, pw, otherDB)
	defer c.Close()
	cmds := make(valkey.Commands, n)
	for i := range cmds {
		cmds[i] = c.B().Get().Key(dbKey(i)).Build()
	}
	ok := 0
	for i, r := range c.DoMulti(context.Background(), cmds...) {
		if v, err := r.ToString(); err == nil && v == "v"+strconv.Itoa(i) {
			ok++
		} else {
			GinkgoWriter.Printf("read %s in database %d: %q, %v (missing)\n", dbKey(i), otherDB, v, err)
		}
	}
	return ok
}

// dbSizeIn is the number of keys in database db of the server at addr (-1 when it cannot
// be read).
func dbSizeIn(addr, pw string, db int) int {
	c := inDB(addr, pw, db)
	defer c.Close()
	n, err := c.Do(context.Background(), c.B().Dbsize().Build()).AsInt64()
	if err != nil {
		return -1
	}
	return int(n)
}

// migrateInDB moves (or copies, with keep) the keys of slot in database db from the
// server at src to the one at dst, as a user does by hand; toOwner says dst owns the slot,
// else src does. The one that does not own it imports it meanwhile, so that MIGRATE's
// RESTORE-ASKING and ASKING reach its keys there. It returns the number of keys.
func migrateInDB(src, dst, pw string, db, slot int, keep, toOwner bool) int {
	s := strconv.Itoa(slot)
	owner, other := src, dst
	if toOwner {
		owner, other = dst, src
	}
	ownerID, err := cmd(owner, pw, "CLUSTER", "MYID")
	Expect(err).NotTo(HaveOccurred())
	_, err = cmd(other, pw, "CLUSTER", "SETSLOT", s, "IMPORTING", ownerID)
	Expect(err).NotTo(HaveOccurred())
	c := inDB(src, pw, db)
	defer c.Close()
	ctx := context.Background()
	keys, err := c.Do(ctx, c.B().Arbitrary("CLUSTER", "GETKEYSINSLOT", s, "1000").Build()).AsStrSlice()
	Expect(err).NotTo(HaveOccurred())
	Expect(keys).NotTo(BeEmpty())
	host, port, err := net.SplitHostPort(dst)
	Expect(err).NotTo(HaveOccurred())
	args := []string{"MIGRATE", host, port, "", strconv.Itoa(db), "5000"}
	if keep {
		args = append(args, "COPY")
	}
	args = append(append(args, "AUTH", pw, "KEYS"), keys...)
	for _, r := range c.DoMulti(ctx, c.B().Asking().Build(), c.B().Arbitrary(args...).Build()) {
		Expect(r.Error()).NotTo(HaveOccurred())
	}
	_, err = cmd(other, pw, "CLUSTER", "SETSLOT", s, "STABLE")
	Expect(err).NotTo(HaveOccurred())
	return len(keys)
}

// keySlot is the slot of key.
func keySlot(addr, pw, key string) int {
	c := single(addr, pw)
	defer c.Close()
	n, err := c.Do(context.Background(), c.B().ClusterKeyslot().Key(key).Build()).AsInt64()
	Expect(err).NotTo(HaveOccurred())
	return int(n)
}

var _ = Describe("Several databases in cluster mode", func() {

	It("never flushes a primary without slots whose keys in another database its slot's owner does not hold", func() {
		needsClusterDatabases()
		ns := newNamespace()
		f, pw := formCluster(ns, "k", 1, 1, severalDatabases)
		writeKeys(f, pw, 100)
		writeDBKeys(f, pw, 100)
		c := clusterInDB(f, pw, otherDB)
		for j := 0; j < 20; j++ { // more keys in the slot of db5:0
			Expect(c.Do(context.Background(), c.B().Set().Key(fmt.Sprintf("{%s}:%d", dbKey(0), j)).Value("v").Build()).Error()).NotTo(HaveOccurred())
		}
		c.Close()
		primary, replica := valkeyv1.NodeName("k", 0, 0), valkeyv1.NodeName("k", 0, 1)
		Expect(getNode(ns, primary).Status.Topology.Role).To(Equal(valkeyv1.RolePrimary))

		By("with the controller stopped, the replica comes back as a new primary without slots")
		mgr.stop()
		restarted := false
		DeferCleanup(func() {
			if !restarted {
				mgr = startManager(testOptions)
			}
		})
		f.restart([]string{replica}, true)
		p, r := f.server(primary), f.server(replica)
		_, err := cmd(r.Addr(), pw, "CLUSTER", "MEET", p.Host, strconv.Itoa(p.Port))
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() string { return clusterInfo(r.Addr(), pw, "cluster_state") }, 20*time.Second).Should(Equal("ok"))

		By("it holds a copy of some keys of database 0, and the only copy of a slot's keys of database 5")
		copied := migrateInDB(p.Addr(), r.Addr(), pw, 0, keySlot(p.Addr(), pw, keyName(0)), true, false)
		slot := keySlot(p.Addr(), pw, dbKey(0))
		moved := migrateInDB(p.Addr(), r.Addr(), pw, otherDB, slot, false, false)
		GinkgoWriter.Printf("%d keys of database 0 copied, %d of slot %d in database %d moved to the new primary\n", copied, moved, slot, otherDB)
		Expect(dbSizeIn(r.Addr(), pw, 0)).To(Equal(copied))
		Expect(dbSizeIn(r.Addr(), pw, otherDB)).To(Equal(moved))
		mgr = startManager(testOptions)
		restarted = true

		Consistently(func() int { return dbSizeIn(r.Addr(), pw, otherDB) }, 3*testOptions.ResyncPeriod).Should(Equal(moved),
			"the only copy of the slot's keys in database 5 was flushed")
		Eventually(joinedReason(ns, replica), 30*time.Second).Should(Equal(valkeyv1.ReasonKeysNotElsewhere))
		Expect(status.Get(getNode(ns, replica).Status.Conditions, valkeyv1.ConditionClusterJoined).Message).To(
			ContainSubstring(fmt.Sprintf("in database %d, in 1 slots", otherDB)))
		Expect(eventsWithReason(ns, valkeyv1.EventKeysNotFlushed)).To(BeNumerically(">=", 1))

		By("once the owner holds them again (the user copied them back), the node is flushed and follows the primary")
		Expect(migrateInDB(r.Addr(), p.Addr(), pw, otherDB, slot, true, true)).To(Equal(moved))
		Eventually(func() error { return checkHealthy(f, pw, 1, 1) }, formTimeout).Should(Succeed())
		Eventually(clusterReady(ns, "k"), 30*time.Second).Should(Succeed())
		Expect(readKeys(f, pw, 100)).To(Equal(100))
		Expect(readDBKeys(f, pw, 100)).To(Equal(100))
	})

	It("moves the keys of every database when slots move key by key", func() {
		needsClusterDatabases()
		keyByKey()
		ns := newNamespace()
		f, pw := formCluster(ns, "m", 1, 0, severalDatabases)
		writeKeys(f, pw, 500)
		writeDBKeys(f, pw, 500)
		primary := valkeyv1.NodeName("m", 0, 0)

		setShards(ns, "m", 2)
		Eventually(clusterReady(ns, "m"), keyByKeyScaleIn).Should(Succeed())
		Eventually(func() error { return checkHealthy(f, pw, 2, 0) }, 30*time.Second).Should(Succeed())

		Expect(readKeys(f, pw, 500)).To(Equal(500))
		Expect(readDBKeys(f, pw, 500)).To(Equal(500), "a key of database 5 left behind on a slot's former owner")
		Expect(dbSizeIn(f.server(primary).Addr(), pw, otherDB)).To(BeNumerically("<", 500), "half the slots left %s", primary)
	})
})
