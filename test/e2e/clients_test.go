package e2e

import (
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// Clients in pods reach a cluster through its client Service's DNS name, as the README
// shows: a valkey-go cluster client seeded with valkey-<cluster>.<namespace>.svc.cluster.local
// writes keys over every shard (redirects included) and reads them back; with
// spec.announce: hostname the nodes name themselves by their pods' DNS names.
var _ = Describe("Clients through the Services", Label("clients"), Ordered, func() {
	var cluster *valkeyv1.ValkeyCluster

	BeforeAll(func() {
		requireClusterDNS()
		cluster = newCluster(newNamespace("e2e-clients"), "reach", 3, 0, nil)
		waitReady(cluster, 4*time.Minute)
	})

	It("makes the client and headless Services", func() {
		var svc corev1.Service
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: cluster.Namespace, Name: valkeyv1.ClientServiceName(cluster.Name)}, &svc)).To(Succeed())
		Expect(svc.Spec.ClusterIP).NotTo(Or(BeEmpty(), Equal(corev1.ClusterIPNone)))
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: cluster.Namespace, Name: valkeyv1.HeadlessServiceName(cluster.Name)}, &svc)).To(Succeed())
		Expect(svc.Spec.ClusterIP).To(Equal(corev1.ClusterIPNone))
	})

	It("lets a cluster client in a pod write and read keys over every shard through the client Service's DNS name", func() {
		out := runClusterClient(cluster, "client-ip", "ip:")
		Expect(out).To(ContainSubstring("written=500 read=500 mismatched=0"))
		nodes := clientNodes(out)
		for _, n := range clusterNodes(cluster) {
			Expect(nodes).To(ContainElement(n.Status.Workload.PodIP+":6379"), "the client learned %s by its pod IP", n.Name)
		}
	})

	It("with announce: hostname, names the nodes by their DNS names in CLUSTER SLOTS, and the client still works", func() {
		updateCluster(cluster, func(c *valkeyv1.ValkeyCluster) { c.Spec.Announce = valkeyv1.AnnounceHostname })
		waitReady(cluster, 6*time.Minute)
		nodes := clusterNodes(cluster)
		want := make([]string, 0, len(nodes))
		for _, n := range nodes {
			want = append(want, podDNSName(n))
		}
		for _, n := range nodes {
			Eventually(func() []string { return slotEndpoints(n, password(cluster)) }).WithTimeout(time.Minute).WithPolling(2*time.Second).
				Should(ConsistOf(want), "CLUSTER SLOTS at %s", n.Name)
		}
		out := runClusterClient(cluster, "client-hostname", "hostname:")
		Expect(out).To(ContainSubstring("written=500 read=500 mismatched=0"))
		got := clientNodes(out)
		for _, name := range want {
			Expect(got).To(ContainElement(name+":6379"), "the client learned the node by its DNS name")
		}
	})
})

// requireClusterDNS skips the calling specs on a cluster without a DNS Service
// (kube-system/kube-dns; the local cluster runs CoreDNS, test/localcluster/coredns).
func requireClusterDNS() {
	var svc corev1.Service
	err := k8s.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "kube-dns"}, &svc)
	if apierrors.IsNotFound(err) {
		Skip("this cluster has no DNS (no kube-system/kube-dns Service: the local cluster deploys CoreDNS when `make images` has built its image)")
	}
	Expect(err).NotTo(HaveOccurred())
}

// podDNSName is a node's pod's DNS name under the cluster's headless Service.
func podDNSName(n valkeyv1.ValkeyNode) string {
	return n.PodDNSName("cluster.local")
}

// slotEndpoints are the endpoints (the first field of each slot owner) that CLUSTER SLOTS
// at node n names, one per owner.
func slotEndpoints(n valkeyv1.ValkeyNode, pw string) []string {
	vc := nodeClient(n, pw)
	defer vc.Close()
	ranges, err := vc.Do(ctx, vc.B().ClusterSlots().Build()).ToArray()
	if err != nil {
		return []string{err.Error()}
	}
	seen := map[string]bool{}
	var out []string
	for _, r := range ranges {
		fields, err := r.ToArray()
		if err != nil || len(fields) < 3 {
			continue
		}
		owner, err := fields[2].ToArray()
		if err != nil || len(owner) < 1 {
			continue
		}
		if host, err := owner[0].ToString(); err == nil && !seen[host] {
			seen[host] = true
			out = append(out, host)
		}
	}
	return out
}

// runClusterClient runs `kit cluster-client` in a pod of the cluster's namespace against the
// client Service's DNS name, with the cluster's password from its Secret, until it exits;
// it fails the spec unless the pod succeeded, and returns what kit printed.
func runClusterClient(c *valkeyv1.ValkeyCluster, name, prefix string) string {
	seed := fmt.Sprintf("%s.%s.svc.cluster.local:6379", valkeyv1.ClientServiceName(c.Name), c.Namespace)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.Namespace},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](1000),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name: "client", Image: valkeyImage,
				Command: []string{"kit", "cluster-client", "-keys", "500", "-prefix", prefix, "-timeout", "90s", seed},
				Env: []corev1.EnvVar{{Name: "VALKEY_PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: valkeyv1.PasswordSecretName(c.Name)}, Key: valkeyv1.DefaultPasswordKey,
				}}}},
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr.To(false),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
		},
	}
	ExpectWithOffset(1, k8s.Create(ctx, p)).To(Succeed())
	EventuallyWithOffset(1, func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(p), p)).To(Succeed())
		g.Expect(p.Status.Phase).To(Or(Equal(corev1.PodSucceeded), Equal(corev1.PodFailed)))
	}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
	out, err := kubectl("-n", p.Namespace, "logs", p.Name)
	ExpectWithOffset(1, err).NotTo(HaveOccurred(), "logs of %s: %s", p.Name, out)
	ExpectWithOffset(1, p.Status.Phase).To(Equal(corev1.PodSucceeded), "kit cluster-client against %s: %s", seed, out)
	return out
}

// clientNodes are the node addresses kit cluster-client printed (nodes=A,B,...).
func clientNodes(out string) []string {
	for _, f := range strings.Fields(out) {
		if v, ok := strings.CutPrefix(f, "nodes="); ok {
			return strings.Split(v, ",")
		}
	}
	return nil
}
