package exposure

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// refusals records what the writer reports.
type refusals struct{ refused []string }

func (r *refusals) Event(string, string, string, string) {}
func (r *refusals) Refused(_, _ string, why string)      { r.refused = append(r.refused, why) }
func (r *refusals) NotOwned(string)                      {}

// A Service the API server cannot make (an internal error, such as a ClusterIP range that
// is full) is reported and does not end the round; an API server that cannot be reached
// still ends it, to be retried.
func TestServiceNotCreatedIsReported(t *testing.T) {
	vc := &valkeyv1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", UID: "u"}}
	for _, tc := range []struct {
		name     string
		err      error
		reported bool
	}{
		{"range full", apierrors.NewInternalError(errors.New("failed to allocate a serviceIP: range is full")), true},
		{"unavailable", apierrors.NewServiceUnavailable("the API server is shutting down"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithInterceptorFuncs(interceptor.Funcs{
				Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
					if _, ok := obj.(*corev1.Service); ok {
						return tc.err
					}
					return c.Create(ctx, obj, opts...)
				},
			}).Build()
			w := Writer{Client: c, APIReader: c, ClientPort: 6379}
			round := &refusals{}
			why, err := w.applyServices(context.Background(), vc, round)
			if !tc.reported {
				if err == nil {
					t.Fatalf("no error for %v; want it returned to be retried", tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("error %v; want the round to go on", err)
			}
			if !strings.Contains(why, "range is full") || !strings.Contains(why, "tried again") || len(round.refused) != 1 {
				t.Fatalf("reported %q (%d refusals); want the API server's reason and that it is tried again", why, len(round.refused))
			}
		})
	}
}
