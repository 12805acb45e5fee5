package e2e

import (
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// The sample cluster (3 shards, 1 replica, persistence on the expandable class, Retain)
// through a user's day: creation, a lost pod, a rolling restart, growth, scale-in, deletion
// and re-creation.
var _ = Describe("A persistent cluster", Ordered, func() {
	var (
		ns      string
		cluster *valkeyv1.ValkeyCluster
	)

	BeforeAll(func() {
		ns = newNamespace("e2e")
		cluster = newCluster(ns, "my-cluster", 3, 1, persistence("1Gi", expandableClass, valkeyv1.ReclaimRetain))
	})

	It("becomes Ready with every claim Bound and mounted and every slot covered", func() {
		waitReady(cluster, 6*time.Minute)
		nodes := clusterNodes(cluster)
		Expect(nodes).To(HaveLen(6))
		for _, n := range nodes {
			var pvc corev1.PersistentVolumeClaim
			Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: valkeyv1.ClaimName(n.Name)}, &pvc)).To(Succeed())
			Expect(pvc.Status.Phase).To(Equal(corev1.ClaimBound), "claim of %s", n.Name)
			Expect(pvc.OwnerReferences).To(BeEmpty(), "claims are never owned")
			var pod corev1.Pod
			Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: n.Status.Workload.PodName}, &pod)).To(Succeed())
			Expect(mountsClaim(&pod, valkeyv1.ClaimName(n.Name))).To(BeTrue(), "%s mounts its claim at /data", pod.Name)
			Expect(status.IsTrue(n.Status.Conditions, valkeyv1.ConditionVolumeReady)).To(BeTrue())
		}
		expectClusterOK(cluster)
		writeKeys(cluster, "base", 2000)
	})

	It("keeps a node's ID when its pod is deleted, and the replica resyncs partially", func() {
		pw := password(cluster)
		replica, primary := replicaAndPrimary(cluster)
		id := myID(replica, pw)
		before := info(primary, pw, "stats")
		replacePod(replica, 3*time.Minute)
		waitReady(cluster, 3*time.Minute)
		replica = nodeByName(cluster, replica.Name)
		Expect(myID(replica, pw)).To(Equal(id), "node ID from nodes.conf on the claim")
		Eventually(func(g Gomega) {
			g.Expect(info(replica, pw, "replication")["master_link_status"]).To(Equal("up"))
		}).WithTimeout(time.Minute).Should(Succeed())
		after := info(primary, pw, "stats")
		Expect(intField(after, "sync_partial_ok")).To(BeNumerically(">", intField(before, "sync_partial_ok")), "partial resync on the primary")
		Expect(intField(after, "sync_full")).To(Equal(intField(before, "sync_full")), "no full resync")
		expectClusterOK(cluster)
		expectKeys(cluster, "base", seq(2000))
	})

	It("rolls every pod for a config change under writes: replicas first, primaries failed over first, nothing lost, no full sync", func() {
		pw := password(cluster)
		roles := map[string]valkeyv1.Role{}
		for _, n := range clusterNodes(cluster) {
			roles[n.Name] = n.Status.Topology.Role
		}
		syncs := watchFullSyncs(cluster, pw)
		rec := recordApprovals(cluster, pw)
		w := startWriter(cluster, "roll")
		updateCluster(cluster, func(c *valkeyv1.ValkeyCluster) {
			c.Spec.Config = map[string]string{"hash-max-listpack-entries": "20000"}
		})
		Eventually(func() int { return rec.approvedNodes() }).WithTimeout(12 * time.Minute).WithPolling(2 * time.Second).Should(Equal(6))
		waitReady(cluster, 6*time.Minute)
		acked, failed := w.stop()
		approvals := rec.stop()
		fullSyncs := syncs.stop()
		GinkgoWriter.Printf("roll: %d writes acknowledged, %d refused during failovers; approvals: %v\n", len(acked), failed, approvals)

		Expect(rec.maxConcurrent()).To(Equal(1), "never two nodes of one cluster approved at once")
		expectReplicasFirst(approvals, roles)
		Expect(fullSyncs).To(BeZero(), "full resyncs during the roll")
		for _, n := range clusterNodes(cluster) {
			Expect(n.Status.Workload.TemplateHash).To(Equal(n.Status.Workload.DesiredTemplateHash))
		}
		expectKeys(cluster, "roll", acked)
		expectKeys(cluster, "base", seq(2000))
	})

	It("grows every claim and the filesystem in each pod from 1Gi to 2Gi without a restart", func() {
		uids := podUIDs(cluster)
		updateCluster(cluster, func(c *valkeyv1.ValkeyCluster) { c.Spec.Persistence.Size = resource.MustParse("2Gi") })
		Eventually(func(g Gomega) {
			for _, n := range clusterNodes(cluster) {
				var pvc corev1.PersistentVolumeClaim
				g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: valkeyv1.ClaimName(n.Name)}, &pvc)).To(Succeed())
				capacity := pvc.Status.Capacity[corev1.ResourceStorage]
				g.Expect(capacity.Cmp(resource.MustParse("2Gi"))).To(BeNumerically(">=", 0), "capacity of %s", pvc.Name)
				g.Expect(status.IsCurrentTrue(&n, n.Status.Conditions, valkeyv1.ConditionVolumeSized)).To(BeTrue(), "%s VolumeSized", n.Name)
				g.Expect(dfSize(ns, n.Status.Workload.PodName)).To(BeNumerically(">", int64(1900)<<20), "filesystem in %s", n.Status.Workload.PodName)
			}
		}).WithTimeout(4 * time.Minute).WithPolling(3 * time.Second).Should(Succeed())
		Expect(podUIDs(cluster)).To(Equal(uids), "no pod restarted")
		expectClusterOK(cluster)
	})

	It("scales in from 3 to 2 shards: slots drained first, nothing lost, retained claims released", func() {
		writeKeys(cluster, "scale", 3000)
		removed := []string{valkeyv1.NodeName("my-cluster", 2, 0), valkeyv1.NodeName("my-cluster", 2, 1)}
		rec := watchDeletion(ns, removed)
		updateCluster(cluster, func(c *valkeyv1.ValkeyCluster) { c.Spec.Shards = 2 })
		waitReady(cluster, 8*time.Minute)
		Eventually(func() []string { return rec.gone() }).WithTimeout(3 * time.Minute).Should(ConsistOf(removed))
		for _, v := range rec.stop() {
			Fail(v)
		}
		Expect(clusterNodes(cluster)).To(HaveLen(4))
		expectClusterOK(cluster)
		expectKeys(cluster, "scale", seq(3000))
		expectKeys(cluster, "base", seq(2000))
		for _, name := range removed {
			var pvc corev1.PersistentVolumeClaim
			Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: valkeyv1.ClaimName(name)}, &pvc)).To(Succeed(), "Retain keeps the claim of %s", name)
			Expect(pvc.Annotations).To(HaveKey(valkeyv1.AnnotationClaimReleased))
		}
	})

	It("keeps the claims when the cluster is deleted and brings data and node IDs back when it is created again", func() {
		ids := nodeIDs(cluster)
		Expect(k8s.Delete(ctx, getCluster(cluster), client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())
		Eventually(func() int {
			var list valkeyv1.ValkeyNodeList
			Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
			return len(list.Items)
		}).WithTimeout(4 * time.Minute).Should(BeZero())
		Eventually(func() int { return len(podUIDs(cluster)) }).WithTimeout(2 * time.Minute).Should(BeZero())
		for name := range ids {
			var pvc corev1.PersistentVolumeClaim
			Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: valkeyv1.ClaimName(name)}, &pvc)).To(Succeed(), "claim of %s retained", name)
		}

		cluster = newCluster(ns, "my-cluster", 2, 1, persistence("2Gi", expandableClass, valkeyv1.ReclaimRetain))
		waitReady(cluster, 6*time.Minute)
		expectClusterOK(cluster)
		Expect(nodeIDs(cluster)).To(Equal(ids), "node IDs came back from the claims")
		expectKeys(cluster, "scale", seq(3000))
		expectKeys(cluster, "base", seq(2000))
	})
})

var _ = Describe("A cluster on a class that cannot expand", func() {
	It("reports ExpansionNotSupported and keeps serving", func() {
		ns := newNamespace("e2e-fixed")
		cluster := newCluster(ns, "fixed", 1, 0, persistence("1Gi", fixedClass, valkeyv1.ReclaimDelete))
		waitReady(cluster, 4*time.Minute)
		writeKeys(cluster, "fixed", 100)
		updateCluster(cluster, func(c *valkeyv1.ValkeyCluster) { c.Spec.Persistence.Size = resource.MustParse("2Gi") })
		Eventually(func(g Gomega) {
			n := clusterNodes(cluster)[0]
			cond := status.Get(n.Status.Conditions, valkeyv1.ConditionVolumeSized)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(cond.Reason).To(Equal(valkeyv1.ReasonExpansionNotSupported))
			g.Expect(status.IsTrue(n.Status.Conditions, valkeyv1.ConditionVolumeReady)).To(BeTrue())
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		var pvc corev1.PersistentVolumeClaim
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: valkeyv1.ClaimName(valkeyv1.NodeName("fixed", 0, 0))}, &pvc)).To(Succeed())
		req := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
		Expect(req.String()).To(Equal("1Gi"), "the claim is left alone")
		expectClusterOK(cluster)
		expectKeys(cluster, "fixed", seq(100))

		// Delete policy: the claim goes with the node.
		Expect(k8s.Delete(ctx, getCluster(cluster))).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(&pvc), &corev1.PersistentVolumeClaim{}))
		}).WithTimeout(3*time.Minute).Should(BeTrue(), "reclaimPolicy Delete removes the claim")
	})
})

var _ = Describe("Enabling persistence on a running cluster", func() {
	It("creates the claims, rolls safely, loses nothing, and keeps node IDs from then on", func() {
		ns := newNamespace("e2e-enable")
		cluster := newCluster(ns, "late", 2, 1, nil)
		waitReady(cluster, 4*time.Minute)
		writeKeys(cluster, "late", 2000)
		pw := password(cluster)
		rec := recordApprovals(cluster, pw)
		w := startWriter(cluster, "late-live")
		updateCluster(cluster, func(c *valkeyv1.ValkeyCluster) {
			c.Spec.Persistence = persistence("1Gi", expandableClass, valkeyv1.ReclaimDelete)
		})
		Eventually(func(g Gomega) {
			for _, n := range clusterNodes(cluster) {
				var pvc corev1.PersistentVolumeClaim
				g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: valkeyv1.ClaimName(n.Name)}, &pvc)).To(Succeed())
				g.Expect(pvc.Status.Phase).To(Equal(corev1.ClaimBound))
			}
		}).WithTimeout(10 * time.Minute).WithPolling(3 * time.Second).Should(Succeed())
		Eventually(func() int { return rec.approvedNodes() }).WithTimeout(10 * time.Minute).WithPolling(2 * time.Second).Should(Equal(4))
		waitReady(cluster, 8*time.Minute)
		acked, _ := w.stop()
		approvals := rec.stop()
		GinkgoWriter.Printf("enable persistence: %d writes acknowledged; approvals: %v\n", len(acked), approvals)
		Expect(rec.maxConcurrent()).To(Equal(1), "never two nodes of one cluster approved at once")
		for _, a := range approvals {
			Expect(a.role).To(Equal(valkeyv1.RoleReplica), "%s was a replica in Valkey when approved (%s)", a.node, a.reason)
		}
		expectClusterOK(cluster)
		expectKeys(cluster, "late", seq(2000))
		expectKeys(cluster, "late-live", acked)
		for _, n := range clusterNodes(cluster) {
			var pod corev1.Pod
			Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: n.Status.Workload.PodName}, &pod)).To(Succeed())
			Expect(mountsClaim(&pod, valkeyv1.ClaimName(n.Name))).To(BeTrue())
		}

		// From now on a restarted node keeps its ID.
		ids := nodeIDs(cluster)
		replacePod(clusterNodes(cluster)[0], 3*time.Minute)
		waitReady(cluster, 4*time.Minute)
		Expect(nodeIDs(cluster)).To(Equal(ids))
	})
})

var _ = Describe("Each controller's permissions", func() {
	It("runs under its own ServiceAccount, with no forbidden errors, and cannot touch what it does not own", func() {
		for _, c := range []string{"volume", "workload", "topology"} {
			var pods corev1.PodList
			Expect(k8s.List(ctx, &pods, client.InNamespace(operatorNamespace), client.MatchingLabels{"app.kubernetes.io/component": c + "-controller"})).To(Succeed())
			Expect(pods.Items).NotTo(BeEmpty(), "%s controller pods", c)
			for _, p := range pods.Items {
				Expect(p.Spec.ServiceAccountName).To(Equal("valkey-" + c + "-controller"))
				logs, err := kubectl("-n", operatorNamespace, "logs", p.Name)
				Expect(err).NotTo(HaveOccurred())
				Expect(rbacDenials(logs)).To(BeEmpty(), "permission errors in the log of %s", p.Name)
			}
		}
		// namespace "" asks about every namespace (-A).
		for _, tc := range []struct {
			controller, verb, resource, namespace string
			allowed                               bool
		}{
			{"volume", "create", "persistentvolumeclaims", "", true},
			{"volume", "create", "statefulsets.apps", "", false},
			{"volume", "delete", "pods", "", false},
			{"workload", "create", "statefulsets.apps", "", true},
			{"workload", "create", "persistentvolumeclaims", "", false},
			{"workload", "delete", "persistentvolumeclaims", "", false},
			{"topology", "create", "valkeynodes.valkey.io", "", true},
			{"topology", "create", "persistentvolumeclaims", "", false},
			{"topology", "create", "statefulsets.apps", "", false},
			{"topology", "get", "pods", "", false},
			// Least privilege: Secrets only those of its clusters, leader election only in the
			// operator's namespace.
			{"topology", "list", "secrets", "", false},
			{"topology", "watch", "secrets", "", false},
			{"topology", "update", "leases.coordination.k8s.io", "kube-system", false},
			{"topology", "create", "leases.coordination.k8s.io", "kube-system", false},
			{"volume", "update", "leases.coordination.k8s.io", "kube-system", false},
			{"volume", "create", "leases.coordination.k8s.io", "kube-system", false},
			{"workload", "update", "leases.coordination.k8s.io", "kube-system", false},
			{"topology", "update", "leases.coordination.k8s.io", operatorNamespace, true},
			{"volume", "update", "leases.coordination.k8s.io", operatorNamespace, true},
			{"workload", "update", "leases.coordination.k8s.io", operatorNamespace, true},
		} {
			scope := []string{"-A"}
			if tc.namespace != "" {
				scope = []string{"-n", tc.namespace}
			}
			args := append([]string{"auth", "can-i", tc.verb, tc.resource}, scope...)
			out, _ := kubectl(append(args, "--as", fmt.Sprintf("system:serviceaccount:%s:valkey-%s-controller", operatorNamespace, tc.controller))...)
			want := "no"
			if tc.allowed {
				want = "yes"
			}
			Expect(strings.TrimSpace(out)).To(HavePrefix(want), "can %s controller %s %s %v", tc.controller, tc.verb, tc.resource, scope)
		}
	})
})
