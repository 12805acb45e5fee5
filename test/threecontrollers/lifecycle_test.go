package threecontrollers_test

import (
	"context"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/valkey-io/valkey-go"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/clusternodes"
	"valkey.io/operator/internal/status"
	"valkey.io/operator/test/bench"
)

var _ = Describe("A cluster run by the three controllers together", Ordered, func() {
	ctx := context.Background()

	It("is formed with each node's conditions written by their own controller", func() {
		Expect(k8s.Create(ctx, bench.NewCluster(ns, "c", 3, 1))).To(Succeed())
		Eventually(clusterCondition("c", valkeyv1.ConditionReady)).Should(Equal("True"))
		nodes := listNodes()
		Expect(nodes).To(HaveLen(6))
		for _, n := range nodes {
			for _, c := range []string{valkeyv1.ConditionVolumeReady, valkeyv1.ConditionWorkloadReady, valkeyv1.ConditionClusterJoined} {
				Expect(status.IsTrue(n.Status.Conditions, c)).To(BeTrue(), "%s of %s", c, n.Name)
			}
			Expect(statusWriters(&n)).To(ContainElements(valkeyv1.FieldManagerVolume, valkeyv1.FieldManagerWorkload, valkeyv1.FieldManagerTopology), n.Name)
			Expect(n.Finalizers).To(ContainElement(valkeyv1.PVCProtectionFinalizer), n.Name)
			var pvc corev1.PersistentVolumeClaim
			Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: valkeyv1.ClaimName(n.Name)}, &pvc)).To(Succeed())
			Expect(pvc.Status.Phase).To(Equal(corev1.ClaimBound), pvc.Name)
		}
		expectServersAgree(3, 1)
	})

	It("rolls every pod, each shard's replica before its primary, losing no acknowledged write", func() {
		primaries := nodesWithRole(valkeyv1.RolePrimary)
		Expect(primaries).To(HaveLen(3))
		w := startAckWriter("c", "roll")
		Eventually(func() int { return len(w.acknowledged()) }).Should(BeNumerically(">", 100))
		patchCluster("c", `{"spec":{"resources":{"requests":{"cpu":"10m"}}}}`)
		Eventually(kube.replaced).Should(HaveLen(6))
		Eventually(clusterCondition("c", valkeyv1.ConditionReady)).Should(Equal("True"))
		Eventually(func() []string { return nodesWith(valkeyv1.ConditionRollPending, "True") }).Should(BeEmpty())
		order := kube.replaced()
		for _, p := range primaries {
			shard := strings.TrimSuffix(p, p[strings.LastIndex(p, "-"):])
			for _, n := range order {
				if strings.HasPrefix(n, "valkey-"+shard+"-") {
					Expect(n).NotTo(Equal("valkey-"+p), "shard %s: its primary %s restarted before its replica (order %v)", shard, p, order)
					break
				}
			}
		}
		expectNoneLost(w, "c", "roll")
		expectServersAgree(3, 1)
	})

	It("scales out to four shards, moving slots to the new one, losing no acknowledged write", func() {
		w := startAckWriter("c", "scale")
		Eventually(func() int { return len(w.acknowledged()) }).Should(BeNumerically(">", 100))
		patchCluster("c", `{"spec":{"shards":4}}`)
		Eventually(func() int { return len(listNodes()) }).Should(Equal(8))
		Eventually(func() error { return serversAgree(4, 1) }).Should(Succeed())
		Eventually(clusterCondition("c", valkeyv1.ConditionReady)).Should(Equal("True"))
		expectNoneLost(w, "c", "scale-out")
		for _, n := range listNodes() {
			if n.Status.Topology != nil && n.Status.Topology.Role == valkeyv1.RolePrimary {
				Expect(n.Status.Topology.Slots).To(BeNumerically("~", 16384/4, 1), n.Name)
			}
		}
	})

	It("is deleted: every node drained and released, the claims kept, the servers stopped", func() {
		Expect(k8s.Delete(ctx, &valkeyv1.ValkeyCluster{ObjectMeta: objectMeta("c")})).To(Succeed())
		Eventually(listNodes).Should(BeEmpty())
		Eventually(func() int {
			var list appsv1.StatefulSetList
			Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
			return len(list.Items)
		}).Should(BeZero())
		Eventually(kube.running).Should(BeZero())
		var claims corev1.PersistentVolumeClaimList
		Expect(k8s.List(ctx, &claims, client.InNamespace(ns))).To(Succeed())
		Expect(claims.Items).To(HaveLen(8))
		for _, pvc := range claims.Items {
			Expect(pvc.Annotations).To(HaveKey(valkeyv1.AnnotationClaimReleased), pvc.Name)
		}
	})
})

// expectServersAgree checks what the servers say of the cluster: every slot assigned,
// state ok, shards primaries each with replicas replicas.
func expectServersAgree(shards, replicas int) {
	GinkgoHelper()
	Eventually(func() error { return serversAgree(shards, replicas) }).Should(Succeed())
}

// serversAgree is nil when a server reports the cluster ok with every slot assigned and
// shards primaries that own slots, each followed by replicas replicas.
func serversAgree(shards, replicas int) error {
	addrs := kube.addrs()
	if len(addrs) == 0 {
		return errNoServer
	}
	c, err := serverClient(addrs[0])
	if err != nil {
		return err
	}
	defer c.Close()
	ctx := context.Background()
	info, err := c.Do(ctx, c.B().ClusterInfo().Build()).ToString()
	if err != nil {
		return err
	}
	if !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_slots_assigned:16384") {
		return errorf("cluster info: %s", info)
	}
	out, err := c.Do(ctx, c.B().ClusterNodes().Build()).ToString()
	if err != nil {
		return err
	}
	lines, err := clusternodes.Parse(out)
	if err != nil {
		return err
	}
	followers := map[string]int{}
	var owners []string
	for _, n := range lines {
		if n.Primary() && n.SlotCount() > 0 {
			owners = append(owners, n.ID)
		} else if !n.Primary() {
			followers[n.PrimaryID]++
		}
	}
	if len(owners) != shards {
		return errorf("%d primaries own slots, want %d:\n%s", len(owners), shards, out)
	}
	for _, id := range owners {
		if followers[id] != replicas {
			return errorf("primary %s has %d replicas, want %d:\n%s", id, followers[id], replicas, out)
		}
	}
	return nil
}

// serverClient is a client of one server as the default user. It speaks RESP2 as the
// operator does: over RESP3, CLUSTER NODES is a verbatim string whose "txt:" prefix would
// be read as part of the first node's ID.
func serverClient(addr string) (valkey.Client, error) {
	var s corev1.Secret
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: valkeyv1.PasswordSecretName("c")}, &s); err != nil {
		return nil, err
	}
	return valkey.NewClient(valkey.ClientOption{InitAddress: []string{addr}, Password: string(s.Data[valkeyv1.DefaultPasswordKey]),
		ForceSingleClient: true, DisableCache: true, AlwaysRESP2: true})
}

// statusWriters are the field managers that wrote n's status.
func statusWriters(n *valkeyv1.ValkeyNode) []string {
	var out []string
	for _, m := range n.ManagedFields {
		if m.Subresource == "status" && !slices.Contains(out, m.Manager) {
			out = append(out, m.Manager)
		}
	}
	return out
}
