package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// readyKubeNodes are the names of the cluster's Ready Kubernetes nodes, sorted.
func readyKubeNodes() []string {
	var list corev1.NodeList
	ExpectWithOffset(1, k8s.List(ctx, &list)).To(Succeed())
	var names []string
	for _, n := range list.Items {
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				names = append(names, n.Name)
			}
		}
	}
	sort.Strings(names)
	return names
}

// kubeNodeIndex is the local cluster's number of a Kubernetes node: 1 for the first node (named
// after the machine), K for "<first>-K".
func kubeNodeIndex(host string) int {
	var list corev1.NodeList
	ExpectWithOffset(1, k8s.List(ctx, &list)).To(Succeed())
	for _, n := range list.Items {
		if rest, ok := strings.CutPrefix(host, n.Name+"-"); ok {
			if k, err := strconv.Atoi(rest); err == nil {
				return k
			}
		}
	}
	return 1
}

// startKubeNode starts a stopped node of the local cluster again (a no-op when it runs).
func startKubeNode(host string) {
	out, err := localCluster("start-node", strconv.Itoa(kubeNodeIndex(host)))
	ExpectWithOffset(1, err).NotTo(HaveOccurred(), out)
}

// kubeNodeOf is the Kubernetes node the ValkeyNode's pod runs on.
func kubeNodeOf(n valkeyv1.ValkeyNode) string {
	ExpectWithOffset(1, n.Status.Workload).NotTo(BeNil(), "%s has no status.workload", n.Name)
	var pod corev1.Pod
	ExpectWithOffset(1, k8s.Get(ctx, client.ObjectKey{Namespace: n.Namespace, Name: n.Status.Workload.PodName}, &pod)).To(Succeed())
	return pod.Spec.NodeName
}

// shardPDB is the PodDisruptionBudget that selects the pods of one shard of the cluster.
func shardPDB(list []policyv1.PodDisruptionBudget, cluster string, shard int32) *policyv1.PodDisruptionBudget {
	for i := range list {
		sel := list[i].Spec.Selector
		if sel != nil && sel.MatchLabels[valkeyv1.LabelCluster] == cluster && sel.MatchLabels[valkeyv1.LabelShard] == strconv.Itoa(int(shard)) {
			return &list[i]
		}
	}
	return nil
}

// conditionOf is "<status> <reason>: <message>" of a ValkeyCluster condition ("" when absent).
func conditionOf(c *valkeyv1.ValkeyCluster, condition string) string {
	cond := status.Get(getCluster(c).Status.Conditions, condition)
	if cond == nil {
		return ""
	}
	return fmt.Sprintf("%s %s: %s", cond.Status, cond.Reason, cond.Message)
}

// valkeyRole is the node's role as its server reports it ("master" or "slave").
func valkeyRole(n valkeyv1.ValkeyNode, pw string) string {
	return info(n, pw, "replication")["role"]
}

// partner is the other node of n's shard (a 1-replica cluster).
func partner(c *valkeyv1.ValkeyCluster, n valkeyv1.ValkeyNode) valkeyv1.ValkeyNode {
	for _, p := range clusterNodes(c) {
		if p.Spec.Shard == n.Spec.Shard && p.Name != n.Name {
			return p
		}
	}
	Fail("no partner of " + n.Name)
	return valkeyv1.ValkeyNode{}
}

// failOverTo makes the replica n its shard's primary (CLUSTER FAILOVER on it) and waits until
// its server says so and the cluster is Ready again.
func failOverTo(c *valkeyv1.ValkeyCluster, n valkeyv1.ValkeyNode) {
	pw := password(c)
	vc := nodeClient(n, pw)
	defer vc.Close()
	ExpectWithOffset(1, vc.Do(ctx, vc.B().ClusterFailover().Build()).Error()).To(Succeed(), "CLUSTER FAILOVER on %s", n.Name)
	EventuallyWithOffset(1, func() string { return valkeyRole(n, pw) }).WithTimeout(time.Minute).Should(Equal("master"), "%s promoted", n.Name)
	waitReady(c, 3*time.Minute)
}

// byHost groups the cluster's nodes by Kubernetes node.
func byHost(c *valkeyv1.ValkeyCluster) map[string][]valkeyv1.ValkeyNode {
	out := map[string][]valkeyv1.ValkeyNode{}
	for _, n := range clusterNodes(c) {
		h := kubeNodeOf(n)
		out[h] = append(out[h], n)
	}
	return out
}

// arrangeTwoPrimaries picks a Kubernetes node with two of the cluster's nodes (other than the
// first, which also runs the controllers, when it can), makes exactly two primaries there by
// failing over, and returns the node's name.
func arrangeTwoPrimaries(c *valkeyv1.ValkeyCluster) string {
	pw := password(c)
	hosts := byHost(c)
	var host string
	for h, ns := range hosts {
		if len(ns) >= 2 && (host == "" || kubeNodeIndex(host) == 1) {
			host = h
		}
	}
	ExpectWithOffset(1, host).NotTo(BeEmpty(), "a Kubernetes node with two of the cluster's nodes: %v", hosts)
	for i, n := range hosts[host] {
		switch master := valkeyRole(n, pw) == "master"; {
		case i < 2 && !master:
			failOverTo(c, n)
		case i >= 2 && master: // exactly two: a third goes to its replica elsewhere
			failOverTo(c, partner(c, n))
		}
	}
	GinkgoWriter.Printf("%s holds the primaries %s and %s\n", host, hosts[host][0].Name, hosts[host][1].Name)
	return host
}

// primaryOnStoppableNode returns a primary on a Kubernetes node other than the first (which
// holds the control plane's address) that holds no other primary: Valkey fails a primary over
// only with the votes of a majority of primaries, so the node lost must not take most of them
// (after a drain, all of them can be on one node). It fails over to arrange that.
func primaryOnStoppableNode(c *valkeyv1.ValkeyCluster) (valkeyv1.ValkeyNode, string) {
	pw := password(c)
	for h, ns := range byHost(c) {
		if kubeNodeIndex(h) == 1 {
			continue
		}
		var primaries []valkeyv1.ValkeyNode
		for _, n := range ns {
			if valkeyRole(n, pw) == "master" {
				primaries = append(primaries, n)
			}
		}
		if len(primaries) == 0 {
			failOverTo(c, ns[0])
			return nodeByName(c, ns[0].Name), h
		}
		for _, p := range primaries[1:] {
			failOverTo(c, partner(c, p))
		}
		GinkgoWriter.Printf("%s holds one primary, %s\n", h, primaries[0].Name)
		return nodeByName(c, primaries[0].Name), h
	}
	Fail("none of the cluster's nodes is on a Kubernetes node that can be stopped")
	return valkeyv1.ValkeyNode{}, ""
}

// expectPromotedPartner waits until the replica of the lost primary says it is the master.
func expectPromotedPartner(c *valkeyv1.ValkeyCluster, lost valkeyv1.ValkeyNode) {
	p, pw := partner(c, lost), password(c)
	EventuallyWithOffset(1, func() (string, error) {
		m, err := infoAt(ctx, p.Status.Workload.PodIP, pw, "replication", 2*time.Second)
		return m["role"], err
	}).WithTimeout(2*time.Minute).Should(Equal("master"), "%s took over from %s", p.Name, lost.Name)
}

// drainObserver watches, while a Kubernetes node is drained, each primary on it (whether its
// replica answered as the master while the primary's pod was still there, and whether that pod
// went) and how many pods of one shard are down at once.
type drainObserver struct {
	mu         sync.Mutex
	handedOver map[string]bool
	gone       map[string]bool
	maxDown    int
	maxUnready int
	cancel     context.CancelFunc
	done       chan struct{}
}

// observeDrain starts watching the primaries on host and every shard's pods.
func observeDrain(c *valkeyv1.ValkeyCluster, host string) *drainObserver {
	pw, nodes := password(c), clusterNodes(c)
	type watched struct{ name, pod, partnerIP, uid string }
	var primaries []watched
	uids := map[string]string{}
	for _, n := range nodes {
		uids[n.Name] = string(getPod(n).UID)
		if kubeNodeOf(n) == host && valkeyRole(n, pw) == "master" {
			p := partner(c, n)
			primaries = append(primaries, watched{n.Name, n.Status.Workload.PodName, p.Status.Workload.PodIP, string(getPod(n).UID)})
		}
	}
	octx, cancel := context.WithCancel(ctx)
	o := &drainObserver{handedOver: map[string]bool{}, gone: map[string]bool{}, cancel: cancel, done: make(chan struct{})}
	for _, w := range primaries {
		o.handedOver[w.name] = false
	}
	// Its own client: the suite's is rate-limited to a few requests a second, slower than a drain.
	cfg := rest.CopyConfig(restConfig)
	cfg.QPS, cfg.Burst = 100, 200
	fast, err := client.New(cfg, client.Options{Scheme: k8s.Scheme()})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	go func() {
		defer GinkgoRecover()
		defer close(o.done)
		for octx.Err() == nil {
			// The replicas' roles first, then the pods: a master seen while the pod is still
			// listed afterwards was the master before the pod went.
			master := map[string]bool{}
			for _, w := range primaries {
				m, err := infoAt(octx, w.partnerIP, pw, "replication", time.Second)
				master[w.name] = err == nil && m["role"] == "master"
			}
			var list corev1.PodList
			if err := fast.List(octx, &list, client.InNamespace(c.Namespace)); err == nil {
				pods := map[string]*corev1.Pod{}
				for i := range list.Items {
					pods[list.Items[i].Name] = &list.Items[i]
				}
				for _, w := range primaries {
					o.look(w.name, pods[w.pod], w.uid, master[w.name])
				}
				o.countDown(nodes, uids, pods)
			}
			time.Sleep(100 * time.Millisecond) // polling interval of the observer
		}
	}()
	return o
}

// look records whether the primary's pod is gone (not listed, or replaced by a pod with
// another UID) or still there while its replica answered as the master just before.
func (o *drainObserver) look(name string, pod *corev1.Pod, uid string, master bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if pod == nil || string(pod.UID) != uid {
		o.gone[name] = true
	} else if master {
		o.handedOver[name] = true
	}
}

// countDown records the most pods of one shard taken at once (gone, being deleted, or
// replaced by a pod not yet Ready), and the most not Ready at once for any reason.
func (o *drainObserver) countDown(nodes []valkeyv1.ValkeyNode, uids map[string]string, pods map[string]*corev1.Pod) {
	taken, unready := map[int32]int{}, map[int32]int{}
	for _, n := range nodes {
		p := pods[n.Status.Workload.PodName]
		switch {
		case p == nil || p.DeletionTimestamp != nil || (string(p.UID) != uids[n.Name] && !isReady(p)):
			taken[n.Spec.Shard]++
			unready[n.Spec.Shard]++
		case !isReady(p):
			unready[n.Spec.Shard]++
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, d := range taken {
		o.maxDown = max(o.maxDown, d)
	}
	for _, d := range unready {
		o.maxUnready = max(o.maxUnready, d)
	}
}

// stop ends the observer; handedOver tells for each primary whether its pod went and its
// replica was the master before it did; maxDown is the most pods of one shard the drain took
// at once, maxUnready the most not Ready at once (a replica also is while it resyncs).
func (o *drainObserver) stop() (handedOver map[string]bool, maxDown, maxUnready int) {
	o.cancel()
	<-o.done
	handedOver = map[string]bool{}
	for name, first := range o.handedOver {
		handedOver[name] = first && o.gone[name]
	}
	return handedOver, o.maxDown, o.maxUnready
}

// handedOverInLog tells whether n's replica accepted a manual failover since the given time, as
// its server logs it: the graceful hand-over of a stopping primary (CLUSTER FAILOVER needs the
// old primary alive: it pauses its clients and sends its offset), not an election after a
// primary stopped.
func handedOverInLog(c *valkeyv1.ValkeyCluster, n valkeyv1.ValkeyNode, since time.Time) bool {
	p := partner(c, n)
	out, err := kubectl("-n", c.Namespace, "logs", p.Status.Workload.PodName, "--since-time="+since.UTC().Format(time.RFC3339))
	ExpectWithOffset(1, err).NotTo(HaveOccurred(), out)
	return strings.Contains(out, "Manual failover user request accepted")
}

// followLogs follows the logs of the nodes' pods until they end (the pod stops) or stop is
// called; stop returns the lines of each node that contain want.
func followLogs(c *valkeyv1.ValkeyCluster, nodes []valkeyv1.ValkeyNode, want string) (stop func() map[string][]string) {
	type follow struct {
		cmd *exec.Cmd
		out *bytes.Buffer
	}
	follows := map[string]follow{}
	for _, n := range nodes {
		out := &bytes.Buffer{}
		cmd := exec.Command("kubectl", "--kubeconfig", kubeconfig, "-n", c.Namespace, "logs", "-f", n.Status.Workload.PodName)
		cmd.Stdout, cmd.Stderr = out, out
		Expect(cmd.Start()).To(Succeed())
		follows[n.Name] = follow{cmd, out}
	}
	return func() map[string][]string {
		lines := map[string][]string{}
		for name, f := range follows {
			_ = f.cmd.Process.Kill()
			_ = f.cmd.Wait()
			for _, l := range strings.Split(f.out.String(), "\n") {
				if strings.Contains(l, want) {
					lines[name] = append(lines[name], l)
				}
			}
		}
		return lines
	}
}
