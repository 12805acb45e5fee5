package apiserver_test

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"valkey.io/operator/test/bench"
)

var (
	scaleClusters = flag.Int("scale-clusters", 1000, "ValkeyClusters of BenchmarkScale")
	scaleShards   = flag.Int("scale-shards", 3, "shards of each cluster of BenchmarkScale")
	scaleReplicas = flag.Int("scale-replicas", 1, "replicas of each shard of BenchmarkScale")
	scaleTopology = flag.Int("scale-topology-replicas", 3, "topology controller replicas of BenchmarkScale")
	heapProfiles  = flag.String("heap-profiles", "", "folder where BenchmarkScale saves each settled process's heap profile (none when empty)")
	scaleFloors   = flag.Bool("scale-floors", true, "BenchmarkScale also measures each binary's memory floor: its caches with no controller (cmd/cachefloor)")
)

// scaleRun is BenchmarkScale's API server, controllers and clusters.
type scaleRun struct {
	srv      *server
	ctrls    []*bench.Controller
	clusters int
	nodes    int
}

// benchScale fans out many small clusters at once on the three binaries, the topology
// controller in several replicas sharing its partitions, and measures the time for all to
// be fanned out, then, settled: each process's API writes, CPU and reconciles over a window,
// and its memory.
func benchScale(b *testing.B) {
	if shared.operator != nil { // the 1,002-node run's API server and controllers
		shared.operator.stop()
		shared.operator = nil
	}
	ctx := context.Background()
	r, err := startScale(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer r.stop()
	took, err := r.fanOut(ctx, b)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(took.Seconds(), "all-fanned-out-s")
	if err := r.settled(b); err != nil {
		b.Fatal(err)
	}
	if err := r.floors(b); err != nil {
		b.Fatal(err)
	}
}

func startScale(ctx context.Context) (*scaleRun, error) {
	srv, err := startServer(ctx, shared.binDir)
	if err != nil {
		return nil, err
	}
	r := &scaleRun{srv: srv, clusters: max(1, int(float64(*scaleClusters)**scale))}
	r.nodes = r.clusters * *scaleShards * (1 + *scaleReplicas)
	if err := srv.namespace(ctx, "scale"); err != nil {
		r.stop()
		return nil, err
	}
	if r.ctrls, err = bench.StartReplicas(srv.launch(), *scaleTopology); err != nil {
		r.stop()
		return nil, err
	}
	return r, nil
}

func (r *scaleRun) stop() {
	bench.StopAll(r.ctrls)
	_ = r.srv.env.Stop()
}

// fanOut creates the clusters on 8 goroutines and waits until every node is fanned out; it
// returns the time from the first creation to the last write that fan-out needed.
func (r *scaleRun) fanOut(ctx context.Context, b *testing.B) (time.Duration, error) {
	b.Helper()
	logged, err := r.srv.audit.Offset()
	if err != nil {
		return 0, err
	}
	start := time.Now()
	err = bench.ForEach(ctx, r.clusters, 8, func(ctx context.Context, i int) error {
		return r.srv.client.Create(ctx, bench.NewCluster("scale", fmt.Sprintf("s%04d", i), int32(*scaleShards), int32(*scaleReplicas)))
	})
	if err != nil {
		return 0, err
	}
	created := time.Since(start)
	seen, err := bench.WaitDone(ctx, "fan-out of every cluster", func() (bool, string, error) {
		return bench.NamespaceFannedOut(ctx, r.srv.client, "scale", r.nodes)
	}, start, *fanOutTimeout)
	if err != nil {
		return 0, err
	}
	breakdown, err := r.srv.audit.Writes(logged)
	if err != nil {
		return 0, err
	}
	took := breakdown.FanOutTime(start, seen)
	b.Logf("%d clusters of %d × %d (%d nodes) created in %.1f s, all fanned out in %.1f s (seen at %.1f s); %d topology replicas",
		r.clusters, *scaleShards, *scaleReplicas, r.nodes, created.Seconds(), took.Seconds(), seen.Seconds(), *scaleTopology)
	return took, nil
}

// settled waits for no write for 10 s, then counts each process's writes, CPU and
// reconciles over the idle window, and reads its memory.
func (r *scaleRun) settled(b *testing.B) error {
	b.Helper()
	op := &operatorRun{ctrls: r.ctrls}
	quiet, err := op.waitQuiet(10*time.Second, 10*time.Minute)
	if err != nil {
		return err
	}
	b.Logf("no write for 10 s, %.0f s after the fan-out", quiet.Seconds())
	before, err := scrapeEach(r.ctrls)
	if err != nil {
		return err
	}
	logged, err := r.srv.audit.Offset()
	if err != nil {
		return err
	}
	time.Sleep(*idleWindow) // the window measured: the controllers left alone
	after, err := scrapeEach(r.ctrls)
	if err != nil {
		return err
	}
	idle, err := r.srv.audit.Writes(logged)
	if err != nil {
		return err
	}
	perMinute := time.Minute.Seconds() / idleWindow.Seconds()
	var topoWrites, topoReconciles, topoCPU float64
	for i, c := range r.ctrls {
		d := after[i].Minus(before[i])
		mem, err := bench.ReadMemory(c.Pid())
		if err != nil {
			return err
		}
		label := processLabel(r.ctrls, i)
		if *heapProfiles != "" {
			if err := c.SaveHeapProfile(filepath.Join(*heapProfiles, label+".heap.pb.gz")); err != nil {
				return err
			}
		}
		b.ReportMetric(bench.MiB(mem.RSS), label+"-rss-MiB")
		b.Logf("  %s: %s, heap in use %.1f MiB; over %s settled: %.0f writes (%s), %.0f reconciles (%.2f ms each, %.1f API reads each), %.2f s of CPU",
			label, mem, bench.MiB(after[i].HeapInuse), *idleWindow, d.Writes(), d, d.Reconciles,
			perReconcileMs(d.ReconcileSeconds, d.Reconciles), perReconcile(d.Requests["GET"], d.Reconciles), d.CPU)
		if i == 0 || c.Name != r.ctrls[i-1].Name { // the replicas of a binary share its user agent
			if lines := idle.Lines(c.Name, r.clusters); len(lines) > 0 {
				b.Logf("    %s, settled, per cluster, as the API server logged them: %s", c.Name, strings.Join(lines, ", "))
			}
		}
		if c.Name == "topology-controller" {
			topoWrites, topoReconciles, topoCPU = topoWrites+d.Writes(), topoReconciles+d.Reconciles, topoCPU+d.CPU
			b.ReportMetric(after[i].PartitionsHeld, label+"-partitions")
		}
	}
	b.ReportMetric(topoWrites*perMinute, "topology-idle-writes/min")
	b.ReportMetric(topoCPU*1000/float64(r.clusters)*perMinute, "topology-cpu-ms/cluster/min")
	b.Logf("  topology, all replicas, settled: %.0f writes per minute; %.1f reconciles per cluster per minute; %.2f ms of CPU per cluster per minute",
		topoWrites*perMinute, topoReconciles/float64(r.clusters)*perMinute, topoCPU*1000/float64(r.clusters)*perMinute)
	return nil
}

// scrapeEach samples every controller, in the order of cs.
func scrapeEach(cs []*bench.Controller) ([]bench.Sample, error) {
	out := make([]bench.Sample, len(cs))
	for i, c := range cs {
		s, err := c.Scrape()
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}

// processLabel names cs[i]: its binary, numbered when several replicas of it run.
func processLabel(cs []*bench.Controller, i int) string {
	n, k := 0, 0
	for j, c := range cs {
		if c.Name == cs[i].Name {
			n++
			if j <= i {
				k++
			}
		}
	}
	if n == 1 {
		return cs[i].Name
	}
	return fmt.Sprintf("%s-%d", cs[i].Name, k)
}

func perReconcileMs(seconds, count float64) float64 { return perReconcile(seconds*1000, count) }

func perReconcile(v, count float64) float64 {
	if count == 0 {
		return 0
	}
	return v / count
}
