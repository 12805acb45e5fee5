package e2e

import (
	"context"
	"errors"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// namespaceApprovals watches every ValkeyNode of a namespace from a list's resource version
// (a RetryWatcher: no change is lost between two watches) and keeps, per cluster, the most
// nodes seen with RollApproved=True at one revision, and how many approvals were given.
type namespaceApprovals struct {
	mu       sync.Mutex
	nodes    map[string]valkeyv1.ValkeyNode
	maxConc  map[string]int
	approved map[string]int
	err      error
	cancel   context.CancelFunc
	done     chan struct{}
}

func recordNamespaceApprovals(ns string) *namespaceApprovals {
	wc, err := client.NewWithWatch(restConfig, client.Options{Scheme: k8s.Scheme()})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	var initial valkeyv1.ValkeyNodeList
	ExpectWithOffset(1, wc.List(ctx, &initial, client.InNamespace(ns))).To(Succeed())
	a := &namespaceApprovals{nodes: map[string]valkeyv1.ValkeyNode{}, maxConc: map[string]int{}, approved: map[string]int{}, done: make(chan struct{})}
	var wctx context.Context
	wctx, a.cancel = context.WithCancel(ctx)
	w, err := watchtools.NewRetryWatcherWithContext(wctx, initial.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(watchCtx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return wc.Watch(watchCtx, &valkeyv1.ValkeyNodeList{}, client.InNamespace(ns), &client.ListOptions{Raw: &o})
		},
	})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	for i := range initial.Items {
		a.update(&initial.Items[i], false)
	}
	go func() {
		defer GinkgoRecover()
		defer close(a.done)
		defer w.Stop()
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				a.fail(apierrors.FromObject(ev.Object))
				return
			}
			if n, ok := ev.Object.(*valkeyv1.ValkeyNode); ok {
				a.update(n, ev.Type == watch.Deleted)
			}
		}
		if wctx.Err() == nil {
			a.fail(errors.New("the watch ended before the recorder was stopped"))
		}
	}()
	return a
}

// update applies one node's new state and counts its cluster's approvals at this revision.
func (a *namespaceApprovals) update(n *valkeyv1.ValkeyNode, deleted bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	prev, had := a.nodes[n.Name]
	if deleted {
		delete(a.nodes, n.Name)
	} else {
		a.nodes[n.Name] = *n
	}
	if !deleted && newApproval(prev, had, n) != nil {
		a.approved[n.Spec.ClusterName]++
	}
	conc := 0
	for _, m := range a.nodes {
		if m.Spec.ClusterName == n.Spec.ClusterName && status.IsTrue(m.Status.Conditions, valkeyv1.ConditionRollApproved) {
			conc++
		}
	}
	a.maxConc[n.Spec.ClusterName] = max(a.maxConc[n.Spec.ClusterName], conc)
}

func (a *namespaceApprovals) fail(err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.err = err
}

// stop ends the watch and returns, per cluster, the approvals given and the most at once.
func (a *namespaceApprovals) stop() (approved, maxConcurrent map[string]int) {
	a.cancel()
	<-a.done
	ExpectWithOffset(1, a.err).NotTo(HaveOccurred(), "watching RollApproved")
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.approved, a.maxConc
}

// approvedIn is the number of approvals given so far to the nodes of cluster.
func (a *namespaceApprovals) approvedIn(cluster string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.approved[cluster]
}
