package workloadcontroller_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
	"valkey.io/operator/workloadcontroller"
)

// statusApplies counts, per namespace, the ValkeyNode status applies the workload
// controller sends to the API server (PATCH .../valkeynodes/NAME/status with its field
// manager), and its PATCHes of StatefulSets (apply, or a move of managed fields), seen at the
// HTTP transport of the controller's client.
type statusApplies struct {
	mu    sync.Mutex
	count map[string]int
	sets  map[string]int
}

var workloadApplies = &statusApplies{count: map[string]int{}, sets: map[string]int{}}

// wrap is a rest.Config WrapTransport that counts.
func (s *statusApplies) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		p := strings.Split(req.URL.Path, "/")
		s.mu.Lock()
		switch {
		// /apis/valkey.io/v1alpha1/namespaces/NS/valkeynodes/NAME/status
		case req.Method == http.MethodPatch && len(p) == 9 && p[6] == "valkeynodes" && p[8] == "status" &&
			req.URL.Query().Get("fieldManager") == valkeyv1.FieldManagerWorkload:
			s.count[p[5]]++
		// /apis/apps/v1/namespaces/NS/statefulsets/NAME
		case req.Method == http.MethodPatch && len(p) == 8 && p[6] == "statefulsets":
			s.sets[p[5]]++
		}
		s.mu.Unlock()
		return rt.RoundTrip(req)
	})
}

// in returns the count of status applies of a namespace.
func (s *statusApplies) in(ns string) func() int {
	return func() int {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.count[ns]
	}
}

// statefulSetPatches returns the count of StatefulSet PATCHes of a namespace.
func (s *statusApplies) statefulSetPatches(ns string) func() int {
	return func() int {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.sets[ns]
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

var _ = Describe("Status writes", func() {
	It("during a fan-out apply each node's status once per change: waiting for its volume, then creating", func(ctx context.Context) {
		const nodes = 40
		ns := newNamespace(ctx)
		created := make([]*valkeyv1.ValkeyNode, nodes)
		for i := range created {
			created[i] = createNode(ctx, ns, func(n *valkeyv1.ValkeyNode) {
				n.Name = fmt.Sprintf("c-%d-0", i)
				n.Spec.ClusterName = "c"
				n.Spec.Persistence = &valkeyv1.PersistenceSpec{Size: resource.MustParse("1Gi")}
			})
		}
		for _, n := range created {
			playVolume(ctx, n, false, valkeyv1.ReasonCreating)
		}
		for _, n := range created {
			Eventually(condition(ctx, n, valkeyv1.ConditionWorkloadReady)).Should(Equal("False/WaitingForVolume"))
		}
		for _, n := range created {
			cur := getNode(ctx, n)
			Expect(status.Applier{Client: k8s, FieldManager: valkeyv1.FieldManagerVolume}.ApplyNode(ctx, cur,
				status.VolumeShare{Conditions: []metav1.Condition{
					status.Condition(valkeyv1.ConditionVolumeReady, true, valkeyv1.ReasonWaitingForFirstConsumer, "played by the test"),
				}})).To(Succeed())
		}
		for _, n := range created {
			waitStatefulSet(ctx, n)
			Eventually(condition(ctx, n, valkeyv1.ConditionWorkloadReady)).Should(Equal("False/Creating"))
		}
		// The controller's own ConfigMap and StatefulSet events come back after both are
		// written; none of them changes the status.
		Consistently(workloadApplies.in(ns)).Should(BeNumerically("<=", 2*nodes))
		GinkgoWriter.Printf("workload status applies: %d for %d nodes\n", workloadApplies.in(ns)(), nodes)
	})

	It("during a fan-out are one per node when the volume is reported ready at once: nothing before VolumeReady is written, and each StatefulSet is written once", func(ctx context.Context) {
		const nodes = 40
		ns := newNamespace(ctx)
		created := make([]*valkeyv1.ValkeyNode, nodes)
		for i := range created {
			created[i] = createNode(ctx, ns, func(n *valkeyv1.ValkeyNode) {
				n.Name = fmt.Sprintf("c-%d-0", i)
				n.Spec.ClusterName = "c"
				n.Spec.Persistence = &valkeyv1.PersistenceSpec{Size: resource.MustParse("1Gi")}
			})
			// The volume controller reports a claim on a WaitForFirstConsumer class as ready
			// in its first status apply, a moment after the node appears (reporting all 40
			// only after creating all 40 let the grace pass for the first ones on a loaded
			// machine: 42 writes).
			playVolume(ctx, created[i], true, valkeyv1.ReasonWaitingForFirstConsumer)
		}
		for _, n := range created {
			waitStatefulSet(ctx, n)
			Eventually(condition(ctx, n, valkeyv1.ConditionWorkloadReady)).Should(Equal("False/Creating"))
		}
		Consistently(workloadApplies.in(ns)).Should(Equal(nodes))
		// One apply makes each StatefulSet: none is written again (the managed fields of a
		// StatefulSet the controller made hold nothing to move to its apply), not even when a
		// reconcile comes before the cache shows the StatefulSet just made.
		Expect(workloadApplies.statefulSetPatches(ns)()).To(Equal(nodes), "StatefulSet PATCHes for %d nodes", nodes)
	})

	It("report a node whose VolumeReady never comes as waiting for it, past the grace, and say so", func(ctx context.Context) {
		ns := newNamespace(ctx)
		n := createNode(ctx, ns, func(n *valkeyv1.ValkeyNode) { inCluster(n); withPersistence(n) })
		Eventually(condition(ctx, n, valkeyv1.ConditionWorkloadReady), workloadcontroller.DefaultOptions().VolumeReportGrace+5*time.Second).
			Should(Equal("False/WaitingForVolume"))
		c := status.Get(getNode(ctx, n).Status.Conditions, valkeyv1.ConditionWorkloadReady)
		Expect(c.Message).To(ContainSubstring("has not reported VolumeReady"))
		Expect(time.Since(getNode(ctx, n).CreationTimestamp.Time)).To(BeNumerically(">=", workloadcontroller.DefaultOptions().VolumeReportGrace-time.Second))
		Expect(statefulSet(ctx, n)()).To(BeNil())
	})

	It("from a restarted controller are none for settled nodes", func(ctx context.Context) {
		const nodes = 20
		ns := newNamespace(ctx)
		created := make([]*valkeyv1.ValkeyNode, nodes)
		for i := range created {
			created[i] = createNode(ctx, ns, func(n *valkeyv1.ValkeyNode) {
				n.Name = fmt.Sprintf("c-%d-0", i)
				n.Spec.ClusterName = "c"
			})
		}
		for _, n := range created {
			waitStatefulSet(ctx, n)
			Eventually(condition(ctx, n, valkeyv1.ConditionWorkloadReady)).Should(Equal("False/Creating"))
		}
		Consistently(workloadApplies.in(ns)).Should(Equal(nodes))

		By("a second controller starts with an empty memory and reconciles every node")
		mgr, err := env.NewManager(workloadcontroller.CacheOptions())
		Expect(err).NotTo(HaveOccurred())
		Expect(workloadcontroller.SetupWithManager(mgr, workloadcontroller.Options{StartImage: "valkey.local/workload-controller:dev"})).To(Succeed())
		mctx, stop := context.WithCancel(ctx)
		DeferCleanup(stop)
		go func() {
			defer GinkgoRecover()
			Expect(mgr.Start(mctx)).To(Succeed())
		}()
		Eventually(func() bool { return mgr.GetCache().WaitForCacheSync(ctx) }).Should(BeTrue())
		Consistently(workloadApplies.in(ns), "2s").Should(Equal(nodes))
	})
})
