package apiserver_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/test/bench"
)

// operatorRun is an API server with the three controllers running and a cluster they fanned
// out.
type operatorRun struct {
	srv     *server
	ctrls   []*bench.Controller
	cluster *valkeyv1.ValkeyCluster
	// fanOut is the time from creating the cluster (at start) to the completion of the
	// last write that made it (the API server's audit log), seen is when a poll (every
	// second) found it done; writes are each controller's requests until then.
	start        time.Time
	fanOut, seen time.Duration
	// cpu is the machine's busy CPU time from the cluster's creation until seen.
	cpu    float64
	writes map[string]bench.Sample
	// breakdown is the API server's count of the fan-out's writes by program and resource.
	breakdown bench.Breakdown
}

func (r *operatorRun) nodes() int {
	return int(r.cluster.Spec.Shards * (1 + r.cluster.Spec.Replicas))
}

func (r *operatorRun) stop() {
	bench.StopAll(r.ctrls)
	_ = r.srv.env.Stop()
}

// unrelatedObjects are created before the 1,000-node fan-out (see bench.CreateUnrelated).
const unrelatedObjects = 10000

// unrelated is unrelatedObjects scaled by -scale.
func unrelated() int { return int(float64(unrelatedObjects) * *scale) }

// operator returns the run of a cluster of shards × (1 + replicas) nodes, fanning it out on a
// new API server (and stopping the previous run) unless the last run was of that size.
// With unrelated set, unrelatedObjects are created first.
func operator(b *testing.B, shards, replicas int32, withUnrelated bool) *operatorRun {
	b.Helper()
	shards = max(1, int32(float64(shards)**scale))
	n := int(shards * (1 + replicas))
	if shared.operator != nil && shared.operatorNodes == n {
		return shared.operator
	}
	if shared.operator != nil {
		shared.operator.stop()
		shared.operator = nil
	}
	ctx := context.Background()
	srv, err := startServer(ctx, shared.binDir)
	if err != nil {
		b.Fatal(err)
	}
	r := &operatorRun{srv: srv}
	shared.operator, shared.operatorNodes = r, n
	if withUnrelated {
		start := time.Now()
		if err := bench.CreateUnrelated(ctx, srv.client, "unrelated", unrelated(), 8); err != nil {
			b.Fatal(err)
		}
		b.Logf("created %d unrelated ConfigMaps and Secrets in %.1f s", unrelated(), time.Since(start).Seconds())
	}
	if err := r.fanOutCluster(ctx, shards, replicas); err != nil {
		b.Fatal(err)
	}
	return r
}

// fanOutCluster starts the controllers, creates the cluster and waits for its fan-out.
func (r *operatorRun) fanOutCluster(ctx context.Context, shards, replicas int32) error {
	if err := r.srv.namespace(ctx, "bench"); err != nil {
		return err
	}
	ctrls, err := bench.StartAll(r.srv.launch())
	if err != nil {
		return err
	}
	r.ctrls = ctrls
	before, err := bench.ScrapeAll(ctrls)
	if err != nil {
		return err
	}
	logged, err := r.srv.audit.Offset()
	if err != nil {
		return err
	}
	r.cluster = bench.NewCluster("bench", fmt.Sprintf("c%d", shards*(1+replicas)), shards, replicas)
	cpu0, err := bench.MachineCPU()
	if err != nil {
		return err
	}
	profiled := r.srv.profileCPU(ctrls, fmt.Sprintf("fanout-%d", shards*(1+replicas)))
	r.start = time.Now()
	if err := r.srv.client.Create(ctx, r.cluster); err != nil {
		return err
	}
	if r.seen, err = bench.WaitFanOut(ctx, r.srv.client, r.cluster, r.start, *fanOutTimeout); err != nil {
		return err
	}
	if err := profiled(); err != nil {
		return err
	}
	cpu1, err := bench.MachineCPU()
	if err != nil {
		return err
	}
	r.cpu = cpu1 - cpu0
	after, err := bench.ScrapeAll(ctrls)
	if err != nil {
		return err
	}
	r.writes = map[string]bench.Sample{}
	for name, s := range after {
		r.writes[name] = s.Minus(before[name])
	}
	if r.breakdown, err = r.srv.audit.Writes(logged); err != nil {
		return err
	}
	r.fanOut = r.breakdown.FanOutTime(r.start, r.seen)
	return nil
}

// waitQuiet waits until no controller has written for quiet (at most limit), and returns
// how long that took.
func (r *operatorRun) waitQuiet(quiet, limit time.Duration) (time.Duration, error) {
	start := time.Now()
	last, err := bench.ScrapeAll(r.ctrls)
	if err != nil {
		return 0, err
	}
	lastChange := start
	tick := time.NewTicker(time.Second) // the poll interval of the metrics endpoints
	defer tick.Stop()
	for time.Since(lastChange) < quiet {
		if time.Since(start) > limit {
			return 0, fmt.Errorf("the controllers kept writing for %s", limit)
		}
		<-tick.C
		now, err := bench.ScrapeAll(r.ctrls)
		if err != nil {
			return 0, err
		}
		if totalWrites(now) != totalWrites(last) {
			lastChange = time.Now()
		}
		last = now
	}
	return time.Since(start), nil
}

func totalWrites(s map[string]bench.Sample) float64 {
	var n float64
	for _, v := range s {
		n += v.Writes()
	}
	return n
}
