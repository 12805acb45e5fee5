package volumecontroller_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
	"valkey.io/operator/test/envtest"
	"valkey.io/operator/volumecontroller"
)

// BenchmarkClaimStatusToCondition measures the latency from a change of a claim's status
// (as the PV controller writes it) to the ValkeyNode's VolumeReady condition showing it,
// as a watcher of the ValkeyNode sees it. Each iteration flips the claim between Bound and
// Lost. Run: go test -run '^$' -bench ClaimStatusToCondition -benchtime 200x ./volumecontroller/
func BenchmarkClaimStatusToCondition(b *testing.B) {
	c, ctx, err := benchEnvironment()
	if err != nil {
		b.Fatal(err)
	}

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-"}}
	must(b, c.Create(ctx, ns))
	sc := &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: "bench-" + ns.Name},
		Provisioner:       "example.com/test",
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingImmediate),
	}
	must(b, c.Create(ctx, sc))
	node := newNode(ns.Name, "1Gi", &sc.Name, "")
	must(b, c.Create(ctx, node))

	w, err := c.Watch(ctx, &valkeyv1.ValkeyNodeList{}, client.InNamespace(ns.Name))
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	waitReason := func(reason string) error {
		timeout := time.After(30 * time.Second)
		for {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					return fmt.Errorf("watch closed")
				}
				n, isNode := ev.Object.(*valkeyv1.ValkeyNode)
				if !isNode || ev.Type == watch.Deleted {
					continue
				}
				if cond := status.Get(n.Status.Conditions, valkeyv1.ConditionVolumeReady); cond != nil && cond.Reason == reason {
					return nil
				}
			case <-timeout:
				return fmt.Errorf("VolumeReady did not become %s", reason)
			}
		}
	}
	must(b, waitReason(valkeyv1.ReasonPending))
	pvc := &corev1.PersistentVolumeClaim{}
	must(b, c.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: valkeyv1.ClaimName(node.Name)}, pvc))
	pvc.Spec.VolumeName = "pv-bench"
	must(b, c.Update(ctx, pvc))
	pvc.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}

	latencies := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		phase, reason := corev1.ClaimBound, valkeyv1.ReasonBound
		if i%2 == 1 {
			phase, reason = corev1.ClaimLost, valkeyv1.ReasonClaimLost
		}
		pvc.Status.Phase = phase
		start := time.Now()
		must(b, c.Status().Update(ctx, pvc))
		must(b, waitReason(reason))
		latencies = append(latencies, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(latencies)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(latencies[len(latencies)/2]), "p50-ms")
	b.ReportMetric(ms(latencies[len(latencies)*99/100]), "p99-ms")
	b.ReportMetric(ms(latencies[len(latencies)-1]), "max-ms")
}

var (
	benchOnce   sync.Once
	benchEnv    *envtest.Environment
	benchStop   context.CancelFunc
	benchClient client.WithWatch
	benchErr    error
)

// TestMain stops the benchmark's API server, if a benchmark started one, after all tests
// and benchmarks of the binary ran.
func TestMain(m *testing.M) {
	code := m.Run()
	if benchEnv != nil {
		benchStop()
		_ = benchEnv.Stop()
	}
	os.Exit(code)
}

// benchEnvironment starts, once per test binary, an API server with the controller
// running (the benchmark function runs several times; the manager can only be set up
// once). TestMain stops it.
func benchEnvironment() (client.WithWatch, context.Context, error) {
	benchOnce.Do(func() {
		ctrl.SetLogger(logr.Discard())
		env, err := envtest.Start()
		if err != nil {
			benchErr = err
			return
		}
		var ctx context.Context
		ctx, benchStop = context.WithCancel(context.Background())
		benchEnv = env
		mgr, err := env.NewManager(volumecontroller.CacheOptions())
		if err != nil {
			benchErr = err
			return
		}
		if benchErr = volumecontroller.SetupWithManager(mgr, volumecontroller.Options{}); benchErr != nil {
			return
		}
		go func() { _ = mgr.Start(ctx) }()
		benchClient, benchErr = env.Client()
	})
	return benchClient, context.Background(), benchErr
}

func must(b *testing.B, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}
