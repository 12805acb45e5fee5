package topologycontroller_test

import (
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// progressMessage is the message of the cluster's Progressing condition.
func progressMessage(ns, name string) string {
	c := status.Get(getCluster(ns, name).Status.Conditions, valkeyv1.ConditionProgressing)
	if c == nil {
		return ""
	}
	return c.Message
}

// slotsElsewhere fails unless, in the view of every running server, no node other than
// the one with ID owner owns slots: a server that does founded a cluster of its own.
func slotsElsewhere(f *fakeWorkload, pw, owner string) error {
	for _, a := range f.addrs() {
		lines, err := clusterNodes(a, pw)
		if err != nil {
			continue // not answering: starting or stopping
		}
		for _, l := range lines {
			if l.slots > 0 && l.id != owner {
				return fmt.Errorf("in the view of %s, %s (%s) owns %d slots", a, l.id, l.addr, l.slots)
			}
		}
	}
	return nil
}

// aloneWaiting fails unless no node but owner owns slots, the fresh server at addr sees no
// slot assigned at all, and the cluster's Progressing says it is waiting (msg).
func aloneWaiting(f *fakeWorkload, ns, pw, owner, addr, msg string) error {
	if err := slotsElsewhere(f, pw, owner); err != nil {
		return StopTrying("a server other than the primary owns slots").Wrap(err)
	}
	if n := clusterInfo(addr, pw, "cluster_slots_assigned"); n != "0" {
		return StopTrying("the fresh node sees slots assigned: " + n)
	}
	if p := progressMessage(ns, "c"); !strings.Contains(p, msg) {
		return fmt.Errorf("progressing: %q", p)
	}
	return nil
}

var _ = Describe("A fresh node alone while its peers are down", func() {

	It("gets no slots of its own, and joins as a replica once the primary is back", func() {
		ns := newNamespace()
		f, pw := formCluster(ns, "c", 1, 1)
		writeKeys(f, pw, 500)
		primary, replica := valkeyv1.NodeName("c", 0, 0), valkeyv1.NodeName("c", 0, 1)
		Expect(getNode(ns, primary).Status.Topology.Role).To(Equal(valkeyv1.RolePrimary))
		ids := nodeIDs(ns)

		By("the primary's server goes down, then the replica's comes back empty (new ID, no nodes.conf)")
		f.down(primary)
		f.restart([]string{replica}, true)
		addr := f.server(replica).Addr()
		fresh, err := cmd(addr, pw, "CLUSTER", "MYID")
		Expect(err).NotTo(HaveOccurred())
		Expect(fresh).NotTo(Equal(ids[replica]))
		waiting := "waiting for " + primary + " to be reachable"
		start := time.Now()
		Eventually(func() error { return aloneWaiting(f, ns, pw, ids[primary], addr, waiting) }, 30*time.Second).Should(Succeed())
		GinkgoWriter.Printf("cluster says %q after %s\n", waiting, time.Since(start))
		// The controller looks again every second while it waits: several rounds.
		Consistently(func() error { return aloneWaiting(f, ns, pw, ids[primary], addr, waiting) }, 3*testOptions.ResyncPeriod).Should(Succeed())

		By("the primary comes back: the fresh node joins it as a replica")
		f.up(primary)
		start = time.Now()
		Eventually(func() error {
			if err := slotsElsewhere(f, pw, ids[primary]); err != nil {
				return StopTrying("a server other than the primary owns slots").Wrap(err)
			}
			return checkHealthy(f, pw, 1, 1)
		}, formTimeout).Should(Succeed())
		GinkgoWriter.Printf("healthy %s after the primary came back\n", time.Since(start))
		Eventually(clusterReady(ns, "c"), 30*time.Second).Should(Succeed())
		lines, err := clusterNodes(f.server(primary).Addr(), pw)
		Expect(err).NotTo(HaveOccurred())
		for _, l := range lines {
			switch l.id {
			case ids[primary]:
				Expect(l.slots).To(Equal(16384), "the original primary owns every slot")
			case fresh:
				Expect(l.primary).To(Equal(ids[primary]), "the fresh node follows the original primary")
			default:
				Fail("unexpected node " + l.id + " at " + l.addr)
			}
		}
		n := getNode(ns, replica)
		Expect(n.Status.Topology.NodeID).To(Equal(fresh))
		Expect(n.Status.Topology.Role).To(Equal(valkeyv1.RoleReplica))
		Expect(readKeys(f, pw, 500)).To(Equal(500))
		Expect(dbSize(f.server(replica).Addr(), pw)).To(Equal(500), "the fresh replica synced the primary's keys")
	})
})
