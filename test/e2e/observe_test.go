package e2e

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

func mountsClaim(pod *corev1.Pod, claim string) bool {
	for _, vol := range pod.Spec.Volumes {
		if vol.PersistentVolumeClaim == nil || vol.PersistentVolumeClaim.ClaimName != claim {
			continue
		}
		for _, c := range pod.Spec.Containers {
			for _, m := range c.VolumeMounts {
				if m.Name == vol.Name && m.MountPath == "/data" {
					return true
				}
			}
		}
	}
	return false
}

func isReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func nodeByName(c *valkeyv1.ValkeyCluster, name string) valkeyv1.ValkeyNode {
	var n valkeyv1.ValkeyNode
	ExpectWithOffset(1, k8s.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, &n)).To(Succeed())
	return n
}

// replicaAndPrimary returns a replica and the primary it follows.
func replicaAndPrimary(c *valkeyv1.ValkeyCluster) (replica, primary valkeyv1.ValkeyNode) {
	nodes := clusterNodes(c)
	for _, r := range nodes {
		if r.Status.Topology == nil || r.Status.Topology.Role != valkeyv1.RoleReplica {
			continue
		}
		for _, p := range nodes {
			if p.Status.Topology != nil && p.Status.Topology.NodeID == r.Status.Topology.PrimaryID {
				return r, p
			}
		}
	}
	Fail("no replica with a known primary")
	return
}

// dfSize is the size in bytes of the filesystem at /data inside a pod, measured in the pod
// by the image's kit helper (statfs), 0 when it cannot be read.
func dfSize(ns, pod string) int64 {
	out, err := kubectl("-n", ns, "exec", pod, "-c", "valkey", "--", "kit", "df", "/data")
	if err != nil {
		return 0
	}
	for _, f := range strings.Fields(out) {
		if k, v, ok := strings.Cut(f, "="); ok && k == "size" {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

// expectReplicasFirst checks a roll's approvals: each node was a replica in Valkey when
// approved, the replicas (by roles, as before the roll) came first, and each primary was
// failed over before its restart.
func expectReplicasFirst(approvals []approval, roles map[string]valkeyv1.Role) {
	seenPrimary := false
	for _, a := range approvals {
		ExpectWithOffset(1, a.role).To(Equal(valkeyv1.RoleReplica), "%s was a replica in Valkey when approved (%s)", a.node, a.reason)
		if roles[a.node] == valkeyv1.RolePrimary {
			seenPrimary = true
			ExpectWithOffset(1, a.reason).To(Equal(valkeyv1.ReasonFailedOver), "primary %s failed over before its restart", a.node)
		} else {
			ExpectWithOffset(1, seenPrimary).To(BeFalse(), "replica %s rolled after a primary", a.node)
		}
	}
}

type approval struct {
	node, reason string
	role         valkeyv1.Role
}

// approvals records every RollApproved=True transition of a cluster's nodes, with the role
// the node had at that moment, and how many nodes were approved at once. It watches the
// nodes from a list's resource version, so every status change is seen, in the order the
// API server made them, and the count after each one is the count at that revision.
type approvals struct {
	mu      sync.Mutex
	seen    map[string]bool
	list    []approval
	maxConc int
	err     error
	cancel  context.CancelFunc
	done    chan struct{}
}

func recordApprovals(c *valkeyv1.ValkeyCluster, pw string) *approvals {
	opts := []client.ListOption{client.InNamespace(c.Namespace), client.MatchingLabels{valkeyv1.LabelCluster: c.Name}}
	wc, err := client.NewWithWatch(restConfig, client.Options{Scheme: k8s.Scheme()})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	var initial valkeyv1.ValkeyNodeList
	ExpectWithOffset(1, wc.List(ctx, &initial, opts...)).To(Succeed())
	a := &approvals{seen: map[string]bool{}, done: make(chan struct{})}
	var wctx context.Context
	wctx, a.cancel = context.WithCancel(ctx)
	nodes := map[string]valkeyv1.ValkeyNode{}
	// update applies one node's new state (nil: deleted) and records what it changed.
	update := func(name string, n *valkeyv1.ValkeyNode) {
		prev, had := nodes[name]
		if n == nil {
			delete(nodes, name)
		} else {
			nodes[name] = *n
		}
		conc := 0
		peers := make([]valkeyv1.ValkeyNode, 0, len(nodes))
		for _, m := range nodes {
			peers = append(peers, m)
			if status.IsTrue(m.Status.Conditions, valkeyv1.ConditionRollApproved) {
				conc++
			}
		}
		var add *approval
		if cond := newApproval(prev, had, n); cond != nil {
			add = &approval{node: name, reason: cond.Reason, role: roleInValkey(wctx, *n, peers, pw)}
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		if add != nil {
			a.seen[name] = true
			a.list = append(a.list, *add)
		}
		a.maxConc = max(a.maxConc, conc)
	}
	for i := range initial.Items {
		update(initial.Items[i].Name, &initial.Items[i])
	}
	// A RetryWatcher resumes from the last resource version it delivered when the API server
	// ends a watch, so no change is lost between two watches. When that version is gone (a
	// CRD applied again, as an operator upgrade does, restarts the API server's storage of
	// its objects: 410 Expired), the nodes are listed again and watched from there: what
	// changed meanwhile is seen in the listed state.
	watchFrom := func(rv string) (watch.Interface, error) {
		return watchtools.NewRetryWatcherWithContext(wctx, rv, &cache.ListWatch{
			WatchFuncWithContext: func(watchCtx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return wc.Watch(watchCtx, &valkeyv1.ValkeyNodeList{}, append(opts, &client.ListOptions{Raw: &o})...)
			},
		})
	}
	w, err := watchFrom(initial.ResourceVersion)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	relist := func() (watch.Interface, error) {
		var again valkeyv1.ValkeyNodeList
		if err := wc.List(wctx, &again, opts...); err != nil {
			return nil, err
		}
		for i := range again.Items {
			update(again.Items[i].Name, &again.Items[i])
		}
		return watchFrom(again.ResourceVersion)
	}
	go func() {
		defer GinkgoRecover()
		defer close(a.done)
		defer func() {
			if w != nil {
				w.Stop()
			}
		}()
		for {
			ev, ok := <-w.ResultChan()
			if !ok {
				break
			}
			switch ev.Type {
			case watch.Added, watch.Modified, watch.Deleted:
				n, ok := ev.Object.(*valkeyv1.ValkeyNode)
				if !ok {
					continue
				}
				if ev.Type == watch.Deleted {
					update(n.Name, nil)
				} else {
					update(n.Name, n)
				}
			case watch.Error:
				err := apierrors.FromObject(ev.Object)
				if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
					w.Stop()
					if w, err = relist(); err == nil {
						continue
					}
				}
				a.mu.Lock()
				a.err = err
				a.mu.Unlock()
				return
			}
		}
		if wctx.Err() == nil {
			a.mu.Lock()
			a.err = errors.New("the watch ended before the observer was stopped")
			a.mu.Unlock()
		}
	}()
	return a
}

// newApproval returns the node's RollApproved condition when this change made it True: it was
// not True before (or the node was not known), or it became True again since.
func newApproval(prev valkeyv1.ValkeyNode, had bool, n *valkeyv1.ValkeyNode) *metav1.Condition {
	if n == nil {
		return nil
	}
	cond := status.Get(n.Status.Conditions, valkeyv1.ConditionRollApproved)
	if cond == nil || cond.Status != metav1.ConditionTrue {
		return nil
	}
	if had {
		last := status.Get(prev.Status.Conditions, valkeyv1.ConditionRollApproved)
		if last != nil && last.Status == metav1.ConditionTrue && last.LastTransitionTime.Equal(&cond.LastTransitionTime) {
			return nil
		}
	}
	return cond
}

// roleInValkey judges the node's role in Valkey from its shard partners, each of which
// knows its own role at once: when a partner is the shard's master the node is a replica
// (a failover completes on the promoted side before the old primary is approved, while the
// old primary may already be restarting and other members learn of it only by gossip).
// It is empty when no partner answers.
func roleInValkey(ctx context.Context, n valkeyv1.ValkeyNode, peers []valkeyv1.ValkeyNode, pw string) valkeyv1.Role {
	answered := false
	for _, p := range peers {
		if p.Name == n.Name || p.Spec.Shard != n.Spec.Shard || p.Status.Workload == nil || p.Status.Workload.PodIP == "" {
			continue
		}
		m, err := infoAt(ctx, p.Status.Workload.PodIP, pw, "replication", 2*time.Second)
		if err != nil {
			continue
		}
		answered = true
		if m["role"] == "master" {
			return valkeyv1.RoleReplica
		}
	}
	if answered {
		return valkeyv1.RolePrimary
	}
	return ""
}

func (a *approvals) approvedNodes() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.seen)
}

func (a *approvals) maxConcurrent() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.maxConc
}

// stop ends the watch and returns the approvals in the order they were made; it fails the
// spec when the watch broke off, since a change could then have been missed.
func (a *approvals) stop() []approval {
	a.cancel()
	<-a.done
	ExpectWithOffset(1, a.err).NotTo(HaveOccurred(), "watching RollApproved")
	return a.list
}

// fullSyncs samples sync_full on every node (keyed by run_id, since a restarted server
// starts its counters again) and counts the full resyncs served after it started.
type fullSyncs struct {
	cancel context.CancelFunc
	done   chan struct{}
	first  map[string]int64 // run_id -> first value seen
	last   map[string]int64 // run_id -> last value seen
	fresh  map[string]bool  // run_id first seen after the start
}

func watchFullSyncs(c *valkeyv1.ValkeyCluster, pw string) *fullSyncs {
	f := &fullSyncs{done: make(chan struct{}), first: map[string]int64{}, last: map[string]int64{}, fresh: map[string]bool{}}
	var wctx context.Context
	wctx, f.cancel = context.WithCancel(ctx)
	sample := func(initial bool) {
		var list valkeyv1.ValkeyNodeList
		if err := k8s.List(wctx, &list, client.InNamespace(c.Namespace), client.MatchingLabels{valkeyv1.LabelCluster: c.Name}); err != nil {
			return
		}
		for _, n := range list.Items {
			if n.Status.Workload == nil || n.Status.Workload.PodIP == "" {
				continue
			}
			m, err := infoAt(wctx, n.Status.Workload.PodIP, pw, "everything", 2*time.Second)
			if err != nil {
				continue
			}
			run, v := m["run_id"], intField(m, "sync_full")
			if _, ok := f.first[run]; !ok {
				f.first[run] = v
				f.fresh[run] = !initial
			}
			f.last[run] = v
		}
	}
	sample(true)
	go func() {
		defer GinkgoRecover()
		defer close(f.done)
		for wctx.Err() == nil {
			sample(false)
			time.Sleep(300 * time.Millisecond)
		}
	}()
	return f
}

// stop returns the number of full resyncs served during the watch.
func (f *fullSyncs) stop() int64 {
	f.cancel()
	<-f.done
	var total int64
	for run, last := range f.last {
		if f.fresh[run] {
			total += last
		} else {
			total += last - f.first[run]
		}
	}
	return total
}

// deletions watches nodes being deleted (a real watch, so no update is missed) and records
// any that disappeared while they still owned slots or without Drained=True.
type deletions struct {
	mu         sync.Mutex
	goneNodes  []string
	violations []string
	stopWatch  func()
	done       chan struct{}
}

func watchDeletion(ns string, names []string) *deletions {
	wc, err := client.NewWithWatch(restConfig, client.Options{Scheme: k8s.Scheme()})
	Expect(err).NotTo(HaveOccurred())
	w, err := wc.Watch(ctx, &valkeyv1.ValkeyNodeList{}, client.InNamespace(ns))
	Expect(err).NotTo(HaveOccurred())
	d := &deletions{stopWatch: w.Stop, done: make(chan struct{})}
	watched := map[string]bool{}
	for _, n := range names {
		watched[n] = true
	}
	go func() {
		defer GinkgoRecover()
		defer close(d.done)
		for ev := range w.ResultChan() {
			n, ok := ev.Object.(*valkeyv1.ValkeyNode)
			if !ok || !watched[n.Name] || ev.Type != watch.Deleted {
				continue
			}
			// The object of a Deleted event is its last state.
			d.mu.Lock()
			d.goneNodes = append(d.goneNodes, n.Name)
			if n.Status.Topology != nil && n.Status.Topology.Slots > 0 {
				d.violations = append(d.violations, fmt.Sprintf("%s disappeared while owning %d slots", n.Name, n.Status.Topology.Slots))
			}
			if n.Spec.Persistence != nil && !status.IsTrue(n.Status.Conditions, valkeyv1.ConditionDrained) {
				d.violations = append(d.violations, fmt.Sprintf("%s disappeared before Drained=True", n.Name))
			}
			d.mu.Unlock()
		}
	}()
	return d
}

func (d *deletions) gone() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.goneNodes...)
}

func (d *deletions) stop() []string {
	d.stopWatch()
	<-d.done
	return d.violations
}
