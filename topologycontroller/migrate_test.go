package topologycontroller_test

import (
	"context"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/acl"
	"valkey.io/operator/internal/status"
	"valkey.io/operator/topologycontroller"
)

// keyByKey restarts the controller so that every slot moves key by key (the path of Redis 7
// and Valkey before 9), and back to the suite's options when the spec ends.
func keyByKey() { runWith(keyByKeyOptions()) }

// keyByKeyScaleIn bounds a move of slots key by key that may first wait out the stall
// backoff: 8192 slots, a handful of commands each, which takes one to two minutes when the
// suite's parallel processes and the Redis run share two cores, plus, after a fault that
// stalled them, up to two backoffs of stallMaxRetry (2 min) before they are tried again
// (each spec reports the time it took; a cold CI run, compiling everything and Kubernetes
// alongside, took more than 4 minutes once).
const keyByKeyScaleIn = 6 * time.Minute

// keyByKeyOptions are the suite's options with every slot moved key by key.
func keyByKeyOptions() topologycontroller.Options {
	opts := testOptions
	opts.MigrationMode = topologycontroller.MigrationKeys
	return opts
}

// primaryOf is the node of the shard whose status says it is the primary.
func primaryOf(ns string, shard int32) (primary, replica string) {
	for _, n := range listNodes(ns) {
		if n.Spec.Shard != shard || n.Status.Topology == nil {
			continue
		}
		if n.Status.Topology.Role == valkeyv1.RolePrimary {
			primary = n.Name
		} else {
			replica = n.Name
		}
	}
	ExpectWithOffset(1, primary).NotTo(BeEmpty())
	return primary, replica
}

// localKeys is the number of keys the server at addr holds itself (SCAN, no redirection).
func localKeys(addr, pw string) int {
	c := single(addr, pw)
	defer c.Close()
	n, cursor := 0, uint64(0)
	for {
		e, err := c.Do(context.Background(), c.B().Scan().Cursor(cursor).Count(1000).Build()).AsScanEntry()
		ExpectWithOffset(1, err).NotTo(HaveOccurred())
		n += len(e.Elements)
		if cursor = e.Cursor; cursor == 0 {
			return n
		}
	}
}

// migrateCalls reads the MIGRATE commands of the slow log at addr (which logs every
// command, see logEveryCommand): the keys of each, by name.
func migrateCalls(addr, pw string) [][]string {
	c := single(addr, pw)
	defer c.Close()
	entries, err := c.Do(context.Background(), c.B().Arbitrary("SLOWLOG", "GET", "-1").Build()).ToArray()
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	var out [][]string
	for _, e := range entries {
		fields, err := e.ToArray()
		ExpectWithOffset(1, err).NotTo(HaveOccurred())
		args, err := fields[3].AsStrSlice()
		ExpectWithOffset(1, err).NotTo(HaveOccurred())
		if len(args) == 0 || !strings.EqualFold(args[0], "MIGRATE") {
			continue
		}
		var keys []string
		for i, a := range args {
			if strings.EqualFold(a, "KEYS") {
				keys = args[i+1:]
				break
			}
		}
		// An entry keeps 32 arguments; the last then says how many more there were.
		if n := len(keys); n > 0 && strings.HasPrefix(keys[n-1], "... (") {
			more, _ := strconv.Atoi(strings.Fields(strings.TrimPrefix(keys[n-1], "... ("))[0])
			keys = keys[:n-1]
			for i := 0; i < more; i++ {
				keys = append(keys, "(more)")
			}
		}
		out = append(out, keys)
	}
	return out
}

func logEveryCommand(addr, pw string) {
	for _, kv := range [][]string{{"slowlog-max-len", "100000"}, {"slowlog-log-slower-than", "0"}} {
		_, err := cmd(addr, pw, "CONFIG", "SET", kv[0], kv[1])
		ExpectWithOffset(1, err).NotTo(HaveOccurred())
	}
	_, err := cmd(addr, pw, "SLOWLOG", "RESET")
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
}

// waitSynced waits until the replica at addr has every write of its primary.
func waitSynced(primary, replica, pw string) {
	EventuallyWithOffset(1, func() bool {
		p, err := cmd(primary, pw, "INFO", "replication")
		if err != nil {
			return false
		}
		r, err := cmd(replica, pw, "INFO", "replication")
		if err != nil {
			return false
		}
		return infoField(p, "master_repl_offset") != "" && infoField(p, "master_repl_offset") == infoField(r, "slave_repl_offset")
	}, 20*time.Second).Should(BeTrue())
}

func infoField(info, key string) string {
	for _, l := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), key+":"); ok {
			return v
		}
	}
	return ""
}

var _ = Describe("Slot migrations on bad days", func() {

	It("settles a slot left open toward a node that is gone, and goes on with the other phases", func() {
		ns := newNamespace()
		keyByKey()
		f, pw := formCluster(ns, "c", 3, 0)
		writeKeys(f, pw, 10000)

		By("leaving a slot half migrated from shard 0 to shard 2, then shard 2 loses its data")
		mgr.stop()
		src, gone := valkeyv1.NodeName("c", 0, 0), valkeyv1.NodeName("c", 2, 0)
		openSlotHalfway(f, pw, src, gone)
		lost := localKeys(f.server(gone).Addr(), pw)
		f.restart([]string{gone}, true)
		mgr = startManager(keyByKeyOptions())

		By("the slot is made stable on the source, the lost node is forgotten and its slots handed out")
		Eventually(func() error { return checkHealthy(f, pw, 3, 0) }, 2*time.Minute).Should(Succeed())
		Eventually(clusterReady(ns, "c"), 30*time.Second).Should(Succeed())
		Expect(readKeys(f, pw, 10000)).To(Equal(10000-lost), "keys the source kept were lost")
	})

	It("finishes a migration from the replica that took over the source, and gives the slot away only once it holds no keys", func() {
		ns := newNamespace()
		keyByKey()
		f, pw := formCluster(ns, "c", 2, 1)
		writeKeys(f, pw, 10000)

		By("leaving a slot half migrated from shard 0 to shard 1")
		mgr.stop()
		src, successor := primaryOf(ns, 0)
		dst, _ := primaryOf(ns, 1)
		openSlotHalfway(f, pw, src, dst)
		waitSynced(f.server(src).Addr(), f.server(successor).Addr(), pw)

		By("the source comes back without its data while its replica takes over")
		f.restart([]string{src}, true)
		if strings.Contains(serverRole(f.server(successor).Addr(), getNode(ns, successor)), "slave") {
			_, err := cmd(f.server(successor).Addr(), pw, "CLUSTER", "FAILOVER", "TAKEOVER")
			Expect(err).NotTo(HaveOccurred())
		}
		Eventually(func() string {
			return serverRole(f.server(successor).Addr(), getNode(ns, successor))
		}, 20*time.Second).Should(Equal("master"))
		mgr = startManager(keyByKeyOptions())

		Eventually(func() error { return checkHealthy(f, pw, 2, 1) }, keyByKeyScaleIn).Should(Succeed())
		Eventually(clusterReady(ns, "c"), 30*time.Second).Should(Succeed())
		Expect(readKeys(f, pw, 10000)).To(Equal(10000))
	})

	It("bounds each MIGRATE by bytes as well as keys", func() {
		ns := newNamespace()
		keyByKey()
		f, pw := formCluster(ns, "c", 1, 0)
		src := f.server(valkeyv1.NodeName("c", 0, 0)).Addr()

		By("writing 6 slots with 8 values of 1 MiB each")
		big := strings.Repeat("x", 1<<20)
		for t := 0; t < 6; t++ {
			for k := 0; k < 8; k++ {
				_, err := cmd(src, pw, "SET", "{big"+strconv.Itoa(t*1000)+"}:"+strconv.Itoa(k), big)
				Expect(err).NotTo(HaveOccurred())
			}
		}
		logEveryCommand(src, pw)

		setShards(ns, "c", 2)
		Eventually(func() error { return checkHealthy(f, pw, 2, 0) }, 2*time.Minute).Should(Succeed())
		moved, most := 0, 0
		for _, keys := range migrateCalls(src, pw) {
			if len(keys) > 0 && strings.HasPrefix(keys[0], "{big") {
				moved += len(keys)
				most = max(most, len(keys))
			}
		}
		GinkgoWriter.Printf("%d values of 1 MiB moved, at most %d per MIGRATE\n", moved, most)
		Expect(moved).To(BeNumerically(">=", 8), "no large value moved: the spec proves nothing")
		Expect(most).To(BeNumerically("<=", 4), "a MIGRATE carried more than 4 MiB")
	})

	It("reports a slot whose keys cannot move and retries it with backoff", func() {
		ns := newNamespace()
		keyByKey()
		f, pw := formCluster(ns, "c", 2, 0)
		writeKeys(f, pw, 2000)

		By("the remaining primary refusing every write (maxmemory) while shard 1 is removed")
		keep, leave := f.server(valkeyv1.NodeName("c", 0, 0)).Addr(), f.server(valkeyv1.NodeName("c", 1, 0)).Addr()
		_, err := cmd(keep, pw, "CONFIG", "SET", "maxmemory", "1")
		Expect(err).NotTo(HaveOccurred())
		logEveryCommand(leave, pw)
		setShards(ns, "c", 1)

		Eventually(func(g Gomega) {
			c := status.Get(getCluster(ns, "c").Status.Conditions, valkeyv1.ConditionProgressing)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Reason).To(Equal(valkeyv1.ReasonMigrationStalled))
			g.Expect(c.Message).To(ContainSubstring("slot "))
		}, formTimeout).Should(Succeed())
		Eventually(func() int { return eventsWithReason(ns, valkeyv1.EventMigrationStalled) }, 10*time.Second).Should(BeNumerically(">=", 1))

		By("watching the retries for 8 s: no slot is tried more than 3 times")
		_, err = cmd(leave, pw, "SLOWLOG", "RESET")
		Expect(err).NotTo(HaveOccurred())
		seen := 0
		Consistently(func() int {
			tries := map[string]int{}
			for _, keys := range migrateCalls(leave, pw) {
				if len(keys) > 0 {
					tries[keys[0]]++
				}
			}
			seen = max(seen, len(tries))
			most := 0
			for _, n := range tries {
				most = max(most, n)
			}
			return most
		}, 8*time.Second, time.Second).Should(BeNumerically("<=", 3), "a slot that cannot move is retried hot")
		GinkgoWriter.Printf("%d slots tried in 8 s\n", seen)
		Expect(seen).To(BeNumerically(">", 0))

		By("the slots move once the target accepts writes again")
		_, err = cmd(keep, pw, "CONFIG", "SET", "maxmemory", "0")
		Expect(err).NotTo(HaveOccurred())
		start := time.Now()
		Eventually(func() error { return checkHealthy(f, pw, 1, 0) }, keyByKeyScaleIn).Should(Succeed())
		AddReportEntry("key-by-key scale-in", time.Since(start).Round(time.Second).String())
		Eventually(clusterReady(ns, "c"), 30*time.Second).Should(Succeed())
		Expect(readKeys(f, pw, 2000)).To(Equal(2000))
	})
})

var _ = Describe("Keys moved one batch at a time", func() {

	It("leave the source only once a replica of the target holds them", func() {
		ns := newNamespace()
		keyByKey()
		f, pw := formCluster(ns, "c", 2, 1)
		writeKeys(f, pw, 2000)
		keep, keepReplica := primaryOf(ns, 0)
		leave, _ := primaryOf(ns, 1)
		waitSynced(f.server(keep).Addr(), f.server(keepReplica).Addr(), pw)

		By("the replica of the shard that stays loses its link to its primary (it cannot authenticate)")
		replica := f.server(keepReplica).Addr()
		_, err := cmd(replica, pw, "CONFIG", "SET", "masteruser", "nobody-here")
		Expect(err).NotTo(HaveOccurred())
		_, _ = cmd(replica, pw, "CLIENT", "KILL", "TYPE", "master")
		Eventually(func() string {
			info, _ := cmd(replica, pw, "INFO", "replication")
			return infoField(info, "master_link_status")
		}, 20*time.Second).Should(Equal("down"))

		By("shard 1 removed: its slots wait with their keys on it, and the cluster says why")
		before := localKeys(f.server(leave).Addr(), pw)
		Expect(before).To(BeNumerically(">", 0))
		setShards(ns, "c", 1)
		Consistently(func() int { return localKeys(f.server(leave).Addr(), pw) }, 10*time.Second, time.Second).
			Should(Equal(before), "keys left the source while no replica of the target could hold them")
		Eventually(func(g Gomega) {
			c := status.Get(getCluster(ns, "c").Status.Conditions, valkeyv1.ConditionProgressing)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Message).To(ContainSubstring("wait for a replica of " + keep))
		}, formTimeout).Should(Succeed())

		By("the replica authenticates again: every key moves and none is lost")
		_, err = cmd(replica, pw, "CONFIG", "SET", "masteruser", acl.ReplicationUser)
		Expect(err).NotTo(HaveOccurred())
		start := time.Now()
		Eventually(func() error { return checkHealthy(f, pw, 1, 1) }, keyByKeyScaleIn).Should(Succeed())
		AddReportEntry("key-by-key scale-in once a replica holds the keys", time.Since(start).Round(time.Second).String())
		Eventually(clusterReady(ns, "c"), 30*time.Second).Should(Succeed())
		Expect(readKeys(f, pw, 2000)).To(Equal(2000))
	})
})
