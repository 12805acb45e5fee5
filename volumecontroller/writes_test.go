package volumecontroller_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	storagev1 "k8s.io/api/storage/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// writeCounter counts, per namespace, the writes of the controller's client the API server
// accepted, by method and resource ("PATCH valkeynodes/status"), seen at its HTTP
// transport. A write refused with a conflict changed nothing: a reconcile that read a node
// or a claim from a cache not yet showing the controller's own last write sends a finalizer
// patch whose optimistic lock fails, or a create of a claim that exists.
type writeCounter struct {
	mu    sync.Mutex
	count map[string]map[string]int
}

var controllerWrites = &writeCounter{count: map[string]map[string]int{}}

// wrap is a rest.Config WrapTransport that counts.
func (w *writeCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err == nil && req.Method != http.MethodGet && resp.StatusCode < http.StatusBadRequest {
			w.record(req.Method, req.URL.Path)
		}
		return resp, err
	})
}

// record files a write under its namespace: .../namespaces/NS/RESOURCE[/NAME[/SUB]].
func (w *writeCounter) record(method, path string) {
	p := strings.Split(path, "/")
	i := 0
	for i+2 < len(p) && p[i] != "namespaces" {
		i++
	}
	if i+2 >= len(p) {
		return
	}
	key := method + " " + p[i+2]
	if i+4 < len(p) {
		key += "/" + p[i+4]
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.count[p[i+1]] == nil {
		w.count[p[i+1]] = map[string]int{}
	}
	w.count[p[i+1]][key]++
}

// in returns a copy of a namespace's counts.
func (w *writeCounter) in(ns string) func() map[string]int {
	return func() map[string]int {
		w.mu.Lock()
		defer w.mu.Unlock()
		out := map[string]int{}
		for k, v := range w.count[ns] {
			out[k] = v
		}
		return out
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

var _ = Describe("Writes during a fan-out", func() {
	It("on a WaitForFirstConsumer class are one finalizer patch, one claim and one status apply per node (no event: the status says it)", func(ctx context.Context) {
		const nodes = 30
		ns := newNamespace(ctx)
		class := newClass(ctx, "fanout-"+ns, false, storagev1.VolumeBindingWaitForFirstConsumer, nil)
		created := make([]*valkeyv1.ValkeyNode, nodes)
		for i := range created {
			created[i] = newNode(ns, "1Gi", &class.Name, "")
			created[i].Name = fmt.Sprintf("c-%d-0", i)
			Expect(k8s.Create(ctx, created[i])).To(Succeed())
		}
		for _, n := range created {
			Eventually(condition(ctx, n, valkeyv1.ConditionVolumeReady)).Should(Equal("True/WaitingForFirstConsumer"))
		}
		// The claims' own watch events come back after the status is written; none of them
		// changes it.
		Consistently(controllerWrites.in(ns)).Should(Equal(map[string]int{
			"PATCH valkeynodes":           nodes,
			"POST persistentvolumeclaims": nodes,
			"PATCH valkeynodes/status":    nodes,
		}))
	})
})
