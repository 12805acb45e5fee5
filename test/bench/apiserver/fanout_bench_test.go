package apiserver_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/test/bench"
	"valkey.io/operator/test/envtest"
)

func benchFanOut(b *testing.B, shards, replicas int32, unrelated bool) {
	r := operator(b, shards, replicas, unrelated)
	n := r.nodes()
	b.ReportMetric(r.fanOut.Seconds(), "operator-s")
	b.Logf("operator: %d nodes fanned out in %.1f s (its last write done; seen by a poll every second at %.1f s); machine CPU busy %.1f s until then",
		n, r.fanOut.Seconds(), r.seen.Seconds(), r.cpu)
	var last []string
	for _, k := range bench.FanOutWrites {
		last = append(last, fmt.Sprintf("%s %s %.1f s", k.Verb, k.Resource, r.breakdown.Done[k].Sub(r.start).Seconds()))
	}
	b.Logf("  the last write of each kind done: %s", strings.Join(last, ", "))
	var opWrites float64
	for _, name := range bench.Binaries {
		w := r.writes[name]
		opWrites += w.Writes()
		b.ReportMetric(w.Writes()/float64(n), name+"-writes/node")
		b.Logf("  %s: %.0f writes (%.2f per node: %s), %.1f s of CPU", name, w.Writes(), w.Writes()/float64(n), w, w.CPU)
		b.Logf("    per node, as the API server logged them (%s): %s", r.breakdown.Span(name, r.start),
			strings.Join(r.breakdown.Lines(name, n), ", "))
	}
	bareWrites := float64(bench.BareWritesPerNode * n)
	b.ReportMetric(opWrites/float64(n), "operator-writes/node")
	b.ReportMetric(opWrites/bareWrites, "writes-ratio")
	b.Logf("  operator: %.0f writes, %.2f× the bare client's %.0f (%d per node: ValkeyNode, claim, ConfigMap, StatefulSet, status)",
		opWrites, opWrites/bareWrites, bareWrites, bench.BareWritesPerNode)

	ctx := context.Background()
	tmpl, err := bench.TemplateOf(ctx, r.srv.client, r.cluster.Namespace, valkeyv1.NodeName(r.cluster.Name, 0, 0))
	if err != nil {
		b.Fatal(err)
	}
	// The bare runs start once the controllers stopped writing: a cluster still settling
	// (statuses, budgets) would share the machine's CPU with them.
	if _, err := r.waitQuiet(5*time.Second, 5*time.Minute); err != nil {
		b.Fatal(err)
	}
	bare := bareServer(b)
	names := nodeNames(r.cluster)
	var bare8 time.Duration
	for _, goroutines := range []int{1, 8} {
		took, writes, cpu := bareRun(b, bare, tmpl, fmt.Sprintf("bare-%d-%d", n, goroutines), names, goroutines)
		ratio := r.fanOut.Seconds() / took.Seconds()
		b.ReportMetric(took.Seconds(), fmt.Sprintf("bare%d-s", goroutines))
		b.ReportMetric(ratio, fmt.Sprintf("ratio-vs-bare%d", goroutines))
		b.Logf("bare client, %d goroutine(s): %d writes in %.1f s, machine CPU busy %.1f s; operator/bare = %.2f×",
			goroutines, writes, took.Seconds(), cpu, ratio)
		bare8 = took
	}
	took, writes, cpu := bareRun(b, bare, tmpl.Floor(), fmt.Sprintf("floor-%d-8", n), names, 8)
	b.ReportMetric(took.Seconds()/bare8.Seconds(), "floor-vs-bare8")
	b.Logf("the contract's floor on 8 goroutines (the bare client and a second status apply per node, WorkloadReady by another writer): %d writes in %.1f s, machine CPU busy %.1f s; floor/bare = %.2f×, operator/floor = %.2f×",
		writes, took.Seconds(), cpu, took.Seconds()/bare8.Seconds(), r.fanOut.Seconds()/took.Seconds())
	watched := floorWatched(b, bare, tmpl, n, names)
	b.ReportMetric(watched.Seconds()/bare8.Seconds(), "watched-floor-vs-bare8")
}

// floorWatched runs the contract's floor again with the three controllers' watches open on
// the bare API server (bench.StartWatchers): what the writes and the watches of three
// separate controllers cost without any controller's own work.
func floorWatched(b *testing.B, bare *server, tmpl *bench.Template, n int, names []string) time.Duration {
	b.Helper()
	scheme, err := envtest.Scheme()
	if err != nil {
		b.Fatal(err)
	}
	stop, err := bench.StartWatchers(context.Background(), bare.env.Config, scheme)
	if err != nil {
		b.Fatal(err)
	}
	defer stop()
	took, writes, cpu := bareRun(b, bare, tmpl.Floor(), fmt.Sprintf("watched-%d-8", n), names, 8)
	b.Logf("the floor with the three controllers' watches open: %d writes in %.1f s, machine CPU busy %.1f s", writes, took.Seconds(), cpu)
	return took
}

// bareRun fans tmpl's copies of names out in a new namespace ns on goroutines goroutines of
// the bare API server: the time taken, the writes and the machine's busy CPU-seconds.
func bareRun(b *testing.B, bare *server, tmpl *bench.Template, ns string, names []string, goroutines int) (time.Duration, int64, float64) {
	b.Helper()
	ctx := context.Background()
	if err := bare.namespace(ctx, ns); err != nil {
		b.Fatal(err)
	}
	cpu0, err := bench.MachineCPU()
	if err != nil {
		b.Fatal(err)
	}
	took, writes, err := tmpl.BareFanOut(ctx, bare.client, ns, names, goroutines)
	if err != nil {
		b.Fatal(err)
	}
	cpu1, err := bench.MachineCPU()
	if err != nil {
		b.Fatal(err)
	}
	return took, writes, cpu1 - cpu0
}

// nodeNames are the names of the cluster's nodes, shard by shard.
func nodeNames(vc *valkeyv1.ValkeyCluster) []string {
	var out []string
	for s := range vc.Spec.Shards {
		for r := range vc.Spec.Replicas + 1 {
			out = append(out, valkeyv1.NodeName(vc.Name, s, r))
		}
	}
	return out
}
