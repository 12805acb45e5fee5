package localcluster_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// BenchmarkSampleRoll rolls every pod of a Ready sample (a change of its CPU request) and
// prints the roll's duration, from the change to ValkeyCluster Ready with every pod
// replaced, against the sum of its pods' restart times (each from its old pod's deletion to
// its new pod Ready): the time the roll spends beyond restarting pods one by one.
func BenchmarkSampleRoll(b *testing.B) {
	c := clusterClient(b)
	ctx := context.Background()
	vc := sample(b, namespace(b, c, "bench-roll"))
	if err := c.Create(ctx, vc); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Delete(context.Background(), vc) })
	if err := poll(ctx, 15*time.Minute, "sample Ready", func() (bool, error) { return clusterReady(ctx, c, vc) }); err != nil {
		b.Fatal(err)
	}
	rec, err := watchRestarts(ctx, c, vc.Namespace)
	if err != nil {
		b.Fatal(err)
	}
	defer rec.stop()

	start := time.Now()
	if err := changeCPURequest(ctx, c, vc); err != nil {
		b.Fatal(err)
	}
	done := func() (bool, error) {
		ready, err := clusterReady(ctx, c, vc)
		return ready && rec.restarted() == int(sampleNodes(vc)), err
	}
	if err := poll(ctx, 20*time.Minute, "roll", done); err != nil {
		b.Fatal(err)
	}
	roll := time.Since(start)
	sum := rec.sum()
	b.ReportMetric(roll.Seconds(), "roll-s")
	b.ReportMetric(sum.Seconds(), "restarts-sum-s")
	b.ReportMetric(roll.Seconds()/sum.Seconds(), "ratio")
	b.Logf("roll of %d pods: %.1f s; sum of pod restarts %.1f s (%s); roll/sum = %.2f×",
		sampleNodes(vc), roll.Seconds(), sum.Seconds(), rec, roll.Seconds()/sum.Seconds())
}

// changeCPURequest sets the sample's CPU request to a new value: every pod's template
// changes, so every pod rolls.
func changeCPURequest(ctx context.Context, c client.Client, vc *valkeyv1.ValkeyCluster) error {
	cur := &valkeyv1.ValkeyCluster{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(vc), cur); err != nil {
		return err
	}
	cpu := resource.MustParse("11m")
	if old, ok := cur.Spec.Resources.Requests[corev1.ResourceCPU]; ok && old.Equal(cpu) {
		cpu = resource.MustParse("12m")
	}
	if cur.Spec.Resources.Requests == nil {
		cur.Spec.Resources.Requests = corev1.ResourceList{}
	}
	cur.Spec.Resources.Requests[corev1.ResourceCPU] = cpu
	return c.Update(ctx, cur)
}

// restarts records, per pod name, when the pod that existed at the start began to go
// (deletionTimestamp seen, or its deletion) and when its replacement was first Ready.
type restarts struct {
	mu      sync.Mutex
	w       watch.Interface
	old     map[string]types.UID
	gone    map[string]time.Time
	readyAt map[string]time.Time
}

// watchRestarts lists ns's pods (the ones to be replaced) and watches them from that list.
func watchRestarts(ctx context.Context, c client.WithWatch, ns string) (*restarts, error) {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	r := &restarts{old: map[string]types.UID{}, gone: map[string]time.Time{}, readyAt: map[string]time.Time{}}
	for _, p := range pods.Items {
		r.old[p.Name] = p.UID
	}
	w, err := c.Watch(ctx, &corev1.PodList{}, client.InNamespace(ns))
	if err != nil {
		return nil, err
	}
	r.w = w
	go r.run()
	return r, nil
}

func (r *restarts) stop() { r.w.Stop() }

func (r *restarts) run() {
	for ev := range r.w.ResultChan() {
		p, ok := ev.Object.(*corev1.Pod)
		if !ok {
			continue
		}
		r.record(ev.Type, p, time.Now())
	}
}

func (r *restarts) record(t watch.EventType, p *corev1.Pod, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	oldUID, known := r.old[p.Name]
	if !known {
		return
	}
	if p.UID == oldUID {
		if _, seen := r.gone[p.Name]; !seen && (t == watch.Deleted || p.DeletionTimestamp != nil) {
			r.gone[p.Name] = at
		}
		return
	}
	if _, seen := r.gone[p.Name]; !seen {
		r.gone[p.Name] = at // the old pod's end was not seen: count from its successor's first sight
	}
	if _, seen := r.readyAt[p.Name]; !seen && podReady(p) {
		r.readyAt[p.Name] = at
	}
}

// restarted is the number of pods whose replacement has been Ready.
func (r *restarts) restarted() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.readyAt)
}

// sum is the sum over the replaced pods of their restart times.
func (r *restarts) sum() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	var total time.Duration
	for name, ready := range r.readyAt {
		total += ready.Sub(r.gone[name])
	}
	return total
}

// String lists each pod's restart time.
func (r *restarts) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := ""
	for name, ready := range r.readyAt {
		if s != "" {
			s += ", "
		}
		s += fmt.Sprintf("%s %.1f s", name, ready.Sub(r.gone[name]).Seconds())
	}
	return s
}
