package topologycontroller_test

import (
	"context"
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
	"valkey.io/operator/test/envtest"
	"valkey.io/operator/topologycontroller"
)

// settledReconciles is how many reconciles of a settled cluster each size measures.
const settledReconciles = 10

// BenchmarkForm forms clusters of 8, 32 and 96 nodes (4, 16 and 48 shards of one primary
// and one replica) with the topology controller against real servers on loopback, as the
// topology suite does, and reports per size: the wall and process CPU time to form the
// cluster (controller, fake workload and test client together; the servers and the API
// server are other processes), the heap in use once it is settled, and the work of one
// reconcile of the settled cluster (CPU, bytes allocated, Valkey commands), also per node:
// a per-node figure that stays flat across sizes is work that grows linearly.
//
//	go test ./topologycontroller/ -run '^$' -bench BenchmarkForm -benchtime 1x
func BenchmarkForm(b *testing.B) {
	RegisterFailHandler(func(msg string, _ ...int) { panic(msg) })
	ctrl.SetLogger(logr.Discard())
	var err error
	if env, err = envtest.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = env.Stop() }()
	if k8s, err = env.Client(); err != nil {
		b.Fatal(err)
	}
	for _, size := range []struct{ shards, replicas int32 }{{4, 1}, {16, 1}, {48, 1}} {
		nodes := int(size.shards * (1 + size.replicas))
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			for range b.N {
				benchForm(b, size.shards, size.replicas)
			}
		})
	}
}

// benchForm forms one cluster, measures it and removes its servers.
func benchForm(b *testing.B, shards, replicas int32) {
	nodes := float64(shards * (1 + replicas))
	mgr = startManager(testOptions)
	ns := newNamespace()
	baseHeap := heapInUse()
	cpu0, wall0 := processCPU(), time.Now()
	f := startFakeWorkload(ns)
	defer f.stop()
	newCluster(ns, "bench", shards, replicas)
	waitReady(ns, "bench", 5*time.Minute)
	wall, cpu := time.Since(wall0), processCPU()-cpu0
	pw := clusterPassword(ns, "bench")
	Eventually(func() error { return checkHealthy(f, pw, int(shards), int(replicas)) }, time.Minute).Should(Succeed())
	heap := heapInUse() - baseHeap
	mgr.stop()
	// The fake workload's loop stops (its servers run on) so that only reconciles run.
	f.cancel()
	<-f.done
	w := settledWork(b, ns, "bench")
	// Deleted, the cluster is left alone by the next size's controller.
	Expect(k8s.Delete(context.Background(), getCluster(ns, "bench"))).To(Succeed())

	b.ReportMetric(wall.Seconds(), "form-s")
	b.ReportMetric(cpu.Seconds(), "form-cpu-s")
	b.ReportMetric(cpu.Seconds()*1e3/nodes, "form-cpu-ms/node")
	b.ReportMetric(float64(heap)/(1<<20), "settled-heap-MiB")
	b.ReportMetric(w.cpu.Seconds()*1e3, "reconcile-cpu-ms")
	b.ReportMetric(w.cpu.Seconds()*1e6/nodes, "reconcile-cpu-us/node")
	b.ReportMetric(w.alloc/1024, "reconcile-alloc-KiB")
	b.ReportMetric(w.alloc/nodes, "reconcile-alloc-B/node")
	b.ReportMetric(w.cmds, "reconcile-cmds")
	b.ReportMetric(w.cmds/nodes, "reconcile-cmds/node")
}

// reconcileWork is the mean work of one reconcile.
type reconcileWork struct {
	cpu         time.Duration
	alloc, cmds float64
}

// settledWork runs reconciles of the settled cluster outside any manager (nothing else runs
// in the process) and returns the mean work of one.
func settledWork(b *testing.B, ns, name string) reconcileWork {
	b.Helper()
	m, err := env.NewManager(topologycontroller.CacheOptions())
	if err != nil {
		b.Fatal(err)
	}
	r := topologycontroller.NewReconciler(k8s, m.GetEventRecorder(topologycontroller.Name), testOptions)
	req := ctrl.Request{NamespacedName: client.ObjectKey{Namespace: ns, Name: name}}
	if _, err := r.Reconcile(context.Background(), req); err != nil { // warms up the clients
		b.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	cmds0, cpu0 := topologycontroller.CommandsSent(), processCPU()
	for range settledReconciles {
		if _, err := r.Reconcile(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
	cpu := processCPU() - cpu0
	runtime.ReadMemStats(&after)
	n := float64(settledReconciles)
	return reconcileWork{
		cpu:   cpu / settledReconciles,
		alloc: float64(after.TotalAlloc-before.TotalAlloc) / n,
		cmds:  float64(topologycontroller.CommandsSent()-cmds0) / n,
	}
}

// waitReady waits until the cluster reports Ready=True for its generation; a timeout says
// what the cluster reports as progressing.
func waitReady(ns, name string, timeout time.Duration) {
	Eventually(func() error {
		var vc valkeyv1.ValkeyCluster
		Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &vc)).To(Succeed())
		c := status.Get(vc.Status.Conditions, valkeyv1.ConditionReady)
		if c != nil && c.Status == metav1.ConditionTrue && vc.Status.ObservedGeneration == vc.Generation {
			return nil
		}
		return fmt.Errorf("not ready: %+v; progressing: %+v", c, status.Get(vc.Status.Conditions, valkeyv1.ConditionProgressing))
	}).WithTimeout(timeout).WithPolling(100 * time.Millisecond).Should(Succeed())
}

// processCPU is the user and system CPU time of this process so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// heapInUse is the heap in use after a garbage collection.
func heapInUse() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapInuse)
}
