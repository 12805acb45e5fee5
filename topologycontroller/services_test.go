package topologycontroller_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// serviceWrites counts, per namespace, the requests that write Services (POST, PUT, PATCH,
// DELETE on .../namespaces/NS/services...), seen at the controller's HTTP transport.
type serviceWrites struct {
	mu    sync.Mutex
	count map[string]int
}

func (s *serviceWrites) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		p := strings.Split(req.URL.Path, "/")
		// /api/v1/namespaces/NS/services[/NAME]
		if req.Method != http.MethodGet && len(p) >= 6 && p[1] == "api" && p[3] == "namespaces" && p[5] == "services" {
			s.mu.Lock()
			s.count[p[4]]++
			s.mu.Unlock()
		}
		return rt.RoundTrip(req)
	})
}

func (s *serviceWrites) in(ns string) func() int {
	return func() int {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.count[ns]
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// runCountingServiceWrites restarts the controller with a transport that counts its
// Service writes, and with the suite's plain one when the spec ends.
func runCountingServiceWrites() *serviceWrites {
	w := &serviceWrites{count: map[string]int{}}
	mgr.stop()
	env.Config.WrapTransport = w.wrap
	mgr = startManager(testOptions)
	env.Config.WrapTransport = nil
	DeferCleanup(func() {
		mgr.stop()
		mgr = startManager(testOptions)
	})
	return w
}

// service returns a Service of ns, nil when there is none.
func service(ns, name string) func() *corev1.Service {
	return func() *corev1.Service {
		var s corev1.Service
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &s); err != nil {
			return nil
		}
		return &s
	}
}

func svcPort(name string, port int32) corev1.ServicePort {
	return corev1.ServicePort{Name: name, Protocol: corev1.ProtocolTCP, Port: port, TargetPort: intstr.FromInt32(port)}
}

var _ = Describe("Services", func() {

	It("makes the client and headless Services, owned by the cluster, writes them only when they differ, and puts back a hand edit", func() {
		writes := runCountingServiceWrites()
		ns := newNamespace()
		vc := newCluster(ns, "s", 1, 0)
		DeferCleanup(func() { Expect(k8s.Delete(context.Background(), vc)).To(Succeed()) })
		selector := map[string]string{valkeyv1.LabelCluster: "s", valkeyv1.LabelName: valkeyv1.NameValue}

		Eventually(service(ns, "valkey-s"), 10*time.Second).ShouldNot(BeNil())
		client := service(ns, "valkey-s")()
		Expect(metav1.IsControlledBy(client, vc)).To(BeTrue())
		Expect(client.Spec.Type).To(Equal(corev1.ServiceTypeClusterIP))
		Expect(client.Spec.ClusterIP).NotTo(Or(BeEmpty(), Equal(corev1.ClusterIPNone)))
		Expect(client.Spec.PublishNotReadyAddresses).To(BeFalse(), "only Ready pods are the client Service's endpoints")
		Expect(client.Spec.Selector).To(Equal(selector))
		Expect(client.Spec.Ports).To(Equal([]corev1.ServicePort{svcPort("client", 6379)}))
		Expect(client.Labels).To(HaveKeyWithValue(valkeyv1.LabelManagedBy, valkeyv1.ManagedByValue))

		Eventually(service(ns, "valkey-s-nodes"), 10*time.Second).ShouldNot(BeNil())
		headless := service(ns, "valkey-s-nodes")()
		Expect(metav1.IsControlledBy(headless, vc)).To(BeTrue())
		Expect(headless.Spec.ClusterIP).To(Equal(corev1.ClusterIPNone))
		Expect(headless.Spec.PublishNotReadyAddresses).To(BeTrue())
		Expect(headless.Spec.Selector).To(Equal(selector))
		Expect(headless.Spec.Ports).To(Equal([]corev1.ServicePort{svcPort("client", 6379), svcPort("bus", 16379)}))
		Eventually(func() int { return eventsWithReason(ns, valkeyv1.EventServiceCreated) }, 10*time.Second).Should(BeNumerically(">=", 1))

		By("settled, no round writes them again (three resync periods)")
		Expect(writes.in(ns)()).To(Equal(2), "the two creations")
		Consistently(writes.in(ns), 3*testOptions.ResyncPeriod, 100*time.Millisecond).Should(Equal(2))

		By("a hand edit of the selector is put back")
		edited := service(ns, "valkey-s")()
		edited.Spec.Selector = map[string]string{"app": "other"}
		Expect(k8s.Update(context.Background(), edited)).To(Succeed())
		Eventually(func() map[string]string { return service(ns, "valkey-s")().Spec.Selector }, 10*time.Second).Should(Equal(selector))

	})

	It("adds a port named plaintext to both Services for tls.plaintextPort", func() {
		ns := newNamespace()
		vc := &valkeyv1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p"}}
		vc.Spec.Shards = 1
		vc.Spec.TLS = &valkeyv1.TLSSpec{Generate: true, PlaintextPort: ptr.To[int32](7000)}
		Expect(k8s.Create(context.Background(), vc)).To(Succeed())
		DeferCleanup(func() { Expect(k8s.Delete(context.Background(), vc)).To(Succeed()) })
		Eventually(service(ns, "valkey-p-nodes"), 10*time.Second).ShouldNot(BeNil())
		Expect(service(ns, "valkey-p-nodes")().Spec.Ports).To(Equal([]corev1.ServicePort{svcPort("client", 6379), svcPort("plaintext", 7000), svcPort("bus", 16379)}))
		Eventually(service(ns, "valkey-p"), 10*time.Second).ShouldNot(BeNil())
		Expect(service(ns, "valkey-p")().Spec.Ports).To(Equal([]corev1.ServicePort{svcPort("client", 6379), svcPort("plaintext", 7000)}))
	})

	It("reports a Service of the cluster's name that someone else made, leaves it alone, and makes its own once it is gone", func() {
		ns := newNamespace()
		theirs := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "valkey-t"},
			Spec: corev1.ServiceSpec{
				Selector: map[string]string{"app": "theirs"},
				Ports:    []corev1.ServicePort{{Name: "web", Port: 80, Protocol: corev1.ProtocolTCP}},
			},
		}
		Expect(k8s.Create(context.Background(), theirs)).To(Succeed())
		vc := newCluster(ns, "t", 1, 0)
		DeferCleanup(func() { Expect(k8s.Delete(context.Background(), vc)).To(Succeed()) })

		Eventually(progressingReason(ns, "t"), 20*time.Second).Should(Equal(valkeyv1.ReasonServiceRefused))
		msg := status.Get(getCluster(ns, "t").Status.Conditions, valkeyv1.ConditionProgressing).Message
		Expect(msg).To(ContainSubstring("Service valkey-t exists and is not owned by this cluster"))
		Eventually(func() int { return eventsWithReason(ns, valkeyv1.EventServiceRefused) }, 10*time.Second).Should(Equal(1))
		cur := service(ns, "valkey-t")()
		Expect(cur.OwnerReferences).To(BeEmpty())
		Expect(cur.Spec.Selector).To(Equal(map[string]string{"app": "theirs"}))
		Expect(cur.Spec.Ports).To(HaveLen(1))
		Expect(service(ns, "valkey-t-nodes")()).NotTo(BeNil(), "the other Service is made all the same")

		By("once theirs is deleted, the cluster's own is made and the condition clears")
		Expect(k8s.Delete(context.Background(), cur)).To(Succeed())
		Eventually(func() bool {
			s := service(ns, "valkey-t")()
			return s != nil && metav1.IsControlledBy(s, vc)
		}, 20*time.Second).Should(BeTrue())
		Eventually(progressingReason(ns, "t"), 20*time.Second).ShouldNot(Equal(valkeyv1.ReasonServiceRefused))
	})
})
