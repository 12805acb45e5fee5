package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/valkey-io/valkey-go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

func newNamespace(prefix string) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: prefix + "-" + rand.String(5)}}
	Expect(k8s.Create(ctx, ns)).To(Succeed())
	DeferCleanup(func() {
		if !CurrentSpecReport().Failed() {
			_ = k8s.Delete(context.Background(), ns)
		}
	})
	return ns.Name
}

func newCluster(ns, name string, shards, replicas int32, persistence *valkeyv1.PersistenceSpec) *valkeyv1.ValkeyCluster {
	c := buildCluster(ns, name, shards, replicas, persistence)
	Expect(k8s.Create(ctx, c)).To(Succeed())
	return c
}

// buildCluster is the ValkeyCluster newCluster creates, for a spec to change before creation.
func buildCluster(ns, name string, shards, replicas int32, persistence *valkeyv1.PersistenceSpec) *valkeyv1.ValkeyCluster {
	return &valkeyv1.ValkeyCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: valkeyv1.ValkeyClusterSpec{
			Shards: shards, Replicas: replicas,
			ServerSpec: valkeyv1.ServerSpec{
				Image: valkeyImage, Persistence: persistence,
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi"),
				}},
			},
		},
	}
}

func persistence(size, class string, policy valkeyv1.ReclaimPolicy) *valkeyv1.PersistenceSpec {
	return &valkeyv1.PersistenceSpec{Size: resource.MustParse(size), StorageClassName: ptr.To(class), ReclaimPolicy: policy}
}

func getCluster(c *valkeyv1.ValkeyCluster) *valkeyv1.ValkeyCluster {
	out := &valkeyv1.ValkeyCluster{}
	ExpectWithOffset(1, k8s.Get(ctx, client.ObjectKeyFromObject(c), out)).To(Succeed())
	return out
}

// updateCluster re-reads the cluster, applies change and updates it, retrying on conflicts.
func updateCluster(c *valkeyv1.ValkeyCluster, change func(*valkeyv1.ValkeyCluster)) {
	EventuallyWithOffset(1, func() error {
		cur := getCluster(c)
		change(cur)
		return k8s.Update(ctx, cur)
	}).WithTimeout(30 * time.Second).Should(Succeed())
}

// waitReady waits until the cluster reports Ready for its current generation.
func waitReady(c *valkeyv1.ValkeyCluster, timeout time.Duration) {
	EventuallyWithOffset(1, func(g Gomega) {
		cur := getCluster(c)
		g.Expect(cur.Status.ObservedGeneration).To(Equal(cur.Generation), "status describes the current generation")
		cond := status.Get(cur.Status.Conditions, valkeyv1.ConditionReady)
		g.Expect(cond).NotTo(BeNil(), "Ready condition")
		g.Expect(cond.Status).To(Equal(metav1.ConditionTrue), "Ready: %s %s", cond.Reason, cond.Message)
		nodes := clusterNodes(c)
		g.Expect(nodes).To(HaveLen(int(cur.Spec.Shards * (1 + cur.Spec.Replicas))))
		for _, n := range nodes {
			g.Expect(status.IsTrue(n.Status.Conditions, valkeyv1.ConditionWorkloadReady)).To(BeTrue(), "%s WorkloadReady", n.Name)
			g.Expect(status.IsTrue(n.Status.Conditions, valkeyv1.ConditionClusterJoined)).To(BeTrue(), "%s ClusterJoined", n.Name)
			g.Expect(status.IsTrue(n.Status.Conditions, valkeyv1.ConditionRollPending)).To(BeFalse(), "%s RollPending", n.Name)
		}
	}).WithTimeout(timeout).WithPolling(2 * time.Second).Should(Succeed())
}

// clusterNodes lists the cluster's ValkeyNodes.
func clusterNodes(c *valkeyv1.ValkeyCluster) []valkeyv1.ValkeyNode {
	var list valkeyv1.ValkeyNodeList
	ExpectWithOffset(1, k8s.List(ctx, &list, client.InNamespace(c.Namespace), client.MatchingLabels{valkeyv1.LabelCluster: c.Name})).To(Succeed())
	return list.Items
}

func password(c *valkeyv1.ValkeyCluster) string {
	cur := getCluster(c)
	name, key := valkeyv1.PasswordSecretName(c.Name), valkeyv1.DefaultPasswordKey
	if cur.Spec.PasswordSecret != nil {
		name, key = cur.Spec.PasswordSecret.Name, cur.Spec.PasswordSecret.Key
	}
	var s corev1.Secret
	ExpectWithOffset(1, k8s.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, &s)).To(Succeed())
	return string(s.Data[key])
}

// dialNode connects to the one Valkey server at a pod IP.
func dialNode(podIP, pw string) (valkey.Client, error) {
	return valkey.NewClient(valkey.ClientOption{
		InitAddress: []string{podIP + ":6379"}, Password: pw,
		ForceSingleClient: true, DisableCache: true,
	})
}

// nodeClient connects to one Valkey server at its pod IP.
func nodeClient(n valkeyv1.ValkeyNode, pw string) valkey.Client {
	ExpectWithOffset(1, n.Status.Workload).NotTo(BeNil(), "%s has no status.workload", n.Name)
	vc, err := dialNode(n.Status.Workload.PodIP, pw)
	ExpectWithOffset(1, err).NotTo(HaveOccurred(), "connect to %s at %s", n.Name, n.Status.Workload.PodIP)
	return vc
}

// clusterClient is a cluster-aware client seeded with every node's pod IP.
func clusterClient(c *valkeyv1.ValkeyCluster) valkey.Client {
	vc, err := valkey.NewClient(valkey.ClientOption{
		InitAddress: podAddrs(c), Password: password(c), DisableCache: true,
		ConnWriteTimeout: 5 * time.Second, TLSConfig: clientTLS(c),
	})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return vc
}

// podAddrs are the Valkey addresses of the cluster's pods that have an IP.
func podAddrs(c *valkeyv1.ValkeyCluster) []string {
	var addrs []string
	for _, n := range clusterNodes(c) {
		if n.Status.Workload != nil && n.Status.Workload.PodIP != "" {
			addrs = append(addrs, n.Status.Workload.PodIP+":6379")
		}
	}
	return addrs
}

// info runs INFO <section> on a node and returns its fields.
func info(n valkeyv1.ValkeyNode, pw, section string) map[string]string {
	ExpectWithOffset(1, n.Status.Workload).NotTo(BeNil(), "%s has no status.workload", n.Name)
	m, err := infoAt(ctx, n.Status.Workload.PodIP, pw, section, 5*time.Second)
	ExpectWithOffset(1, err).NotTo(HaveOccurred(), "INFO %s on %s", section, n.Name)
	return m
}

// infoAt runs INFO <section> on the server at podIP within timeout; for observers that run
// beside a spec and skip a server that does not answer.
func infoAt(c context.Context, podIP, pw, section string, timeout time.Duration) (map[string]string, error) {
	vc, err := dialNode(podIP, pw)
	if err != nil {
		return nil, err
	}
	defer vc.Close()
	c, cancel := context.WithTimeout(c, timeout)
	defer cancel()
	s, err := vc.Do(c, vc.B().Info().Section(section).Build()).ToString()
	if err != nil {
		return nil, err
	}
	return parseInfo(s), nil
}

// parseInfo reads INFO and CLUSTER INFO replies ("key:value" lines; RESP3 servers send them as
// verbatim strings that start with "txt:").
func parseInfo(s string) map[string]string {
	s = strings.TrimPrefix(s, "txt:")
	out := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			out[k] = v
		}
	}
	return out
}

func intField(m map[string]string, k string) int64 {
	v, _ := strconv.ParseInt(m[k], 10, 64)
	return v
}

func myID(n valkeyv1.ValkeyNode, pw string) string {
	vc := nodeClient(n, pw)
	defer vc.Close()
	id, err := vc.Do(ctx, vc.B().ClusterMyid().Build()).ToString()
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return id
}

// expectClusterOK checks cluster_state:ok and 16384 slots on every node.
func expectClusterOK(c *valkeyv1.ValkeyCluster) {
	pw := password(c)
	EventuallyWithOffset(1, func(g Gomega) {
		for _, n := range clusterNodes(c) {
			g.Expect(n.Status.Workload).NotTo(BeNil())
			ci := info2(g, n, pw)
			g.Expect(ci["cluster_state"]).To(Equal("ok"), "%s cluster_state", n.Name)
			g.Expect(ci["cluster_slots_assigned"]).To(Equal("16384"), "%s slots", n.Name)
		}
	}).WithTimeout(2 * time.Minute).Should(Succeed())
}

func info2(g Gomega, n valkeyv1.ValkeyNode, pw string) map[string]string {
	vc, err := dialNode(n.Status.Workload.PodIP, pw)
	g.Expect(err).NotTo(HaveOccurred())
	defer vc.Close()
	s, err := vc.Do(ctx, vc.B().ClusterInfo().Build()).ToString()
	g.Expect(err).NotTo(HaveOccurred())
	return parseInfo(s)
}

// writer writes keys continuously through a cluster client and remembers every write the
// server acknowledged.
type writer struct {
	mu     sync.Mutex
	acked  []int
	failed int
	cancel context.CancelFunc
	done   chan struct{}
}

func startWriter(c *valkeyv1.ValkeyCluster, prefix string) *writer {
	vc := clusterClient(c)
	wctx, cancel := context.WithCancel(ctx)
	w := &writer{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer GinkgoRecover()
		defer close(w.done)
		defer vc.Close()
		for i := 0; wctx.Err() == nil; i++ {
			octx, ocancel := context.WithTimeout(wctx, 2*time.Second)
			err := vc.Do(octx, vc.B().Set().Key(fmt.Sprintf("%s-%d", prefix, i)).Value(strconv.Itoa(i)).Build()).Error()
			ocancel()
			w.mu.Lock()
			if err == nil {
				w.acked = append(w.acked, i)
			} else {
				w.failed++
			}
			w.mu.Unlock()
			if err != nil {
				time.Sleep(50 * time.Millisecond)
			} else {
				time.Sleep(2 * time.Millisecond) // a steady stream, not a benchmark
			}
		}
	}()
	return w
}

func (w *writer) stop() (acked []int, failed int) {
	w.cancel()
	<-w.done
	return w.acked, w.failed
}

// writeKeys writes n keys and fails on any error.
func writeKeys(c *valkeyv1.ValkeyCluster, prefix string, n int) {
	vc := clusterClient(c)
	defer vc.Close()
	for i := 0; i < n; i++ {
		ExpectWithOffset(1, vc.Do(ctx, vc.B().Set().Key(fmt.Sprintf("%s-%d", prefix, i)).Value(strconv.Itoa(i)).Build()).Error()).To(Succeed())
	}
}

// expectKeys reads every given key back (pipelined) and counts the lost ones.
func expectKeys(c *valkeyv1.ValkeyCluster, prefix string, ids []int) {
	vc := clusterClient(c)
	defer vc.Close()
	lost := 0
	for start := 0; start < len(ids); start += 500 {
		batch := ids[start:min(start+500, len(ids))]
		cmds := make(valkey.Commands, 0, len(batch))
		for _, i := range batch {
			cmds = append(cmds, vc.B().Get().Key(fmt.Sprintf("%s-%d", prefix, i)).Build())
		}
		for j, r := range vc.DoMulti(ctx, cmds...) {
			if v, err := r.ToString(); err != nil || v != strconv.Itoa(batch[j]) {
				lost++
			}
		}
	}
	ExpectWithOffset(1, lost).To(BeZero(), "acknowledged keys lost out of %d", len(ids))
	GinkgoWriter.Printf("read back %d acknowledged keys of %s: 0 lost\n", len(ids), prefix)
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func podUIDs(c *valkeyv1.ValkeyCluster) map[string]string {
	out := map[string]string{}
	for _, p := range clusterPods(c) {
		out[p.Name] = string(p.UID)
	}
	return out
}

// clusterPods lists the cluster's pods.
func clusterPods(c *valkeyv1.ValkeyCluster) []corev1.Pod {
	var pods corev1.PodList
	ExpectWithOffset(2, k8s.List(ctx, &pods, client.InNamespace(c.Namespace), client.MatchingLabels{valkeyv1.LabelCluster: c.Name})).To(Succeed())
	return pods.Items
}

// replacePod deletes the node's pod and waits until it has been replaced by a Ready pod of
// the same name (another UID) and the node's status gives that pod's IP, so that what
// follows talks to the new server.
func replacePod(n valkeyv1.ValkeyNode, timeout time.Duration) {
	ExpectWithOffset(1, n.Status.Workload).NotTo(BeNil(), "%s has no status.workload", n.Name)
	key := client.ObjectKey{Namespace: n.Namespace, Name: n.Status.Workload.PodName}
	var old corev1.Pod
	ExpectWithOffset(1, k8s.Get(ctx, key, &old)).To(Succeed())
	ExpectWithOffset(1, k8s.Delete(ctx, &old, client.Preconditions{UID: &old.UID})).To(Succeed())
	EventuallyWithOffset(1, func(g Gomega) {
		var p corev1.Pod
		g.Expect(k8s.Get(ctx, key, &p)).To(Succeed())
		g.Expect(p.UID).NotTo(Equal(old.UID), "%s replaced", key.Name)
		g.Expect(isReady(&p)).To(BeTrue(), "%s Ready", key.Name)
		var cur valkeyv1.ValkeyNode
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(&n), &cur)).To(Succeed())
		g.Expect(cur.Status.Workload).NotTo(BeNil())
		g.Expect(cur.Status.Workload.PodIP).To(Equal(p.Status.PodIP), "%s reports the new pod's IP", n.Name)
	}).WithTimeout(timeout).Should(Succeed())
}

func nodeIDs(c *valkeyv1.ValkeyCluster) map[string]string {
	pw := password(c)
	out := map[string]string{}
	for _, n := range clusterNodes(c) {
		out[n.Name] = myID(n, pw)
	}
	return out
}

// rbacDenials are the log lines that report a request the API server's authorizer refused
// ("<resource> is forbidden: User \"system:serviceaccount:...\" cannot <verb> ..."). Other
// refusals that also say "forbidden" (admission, such as a namespace being terminated) are
// printed but are not permission errors.
func rbacDenials(logs string) []string {
	var out []string
	for _, line := range strings.Split(logs, "\n") {
		l := strings.ToLower(line)
		if !strings.Contains(l, "forbidden") {
			continue
		}
		if strings.Contains(l, `forbidden: user \"system:serviceaccount:`) || strings.Contains(l, `forbidden: user "system:serviceaccount:`) {
			out = append(out, line)
		} else {
			GinkgoWriter.Printf("refused by admission, not by RBAC: %s\n", line)
		}
	}
	return out
}
