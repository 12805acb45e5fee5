package volumecontroller

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/volumeusage"
)

// Usage measurement (see docs/contract.md, "Volume usage and automatic growth"): every
// UsageInterval the controller reads valkey-start's /metrics on each node's pod
// (status.workload.podIP) and keeps the latest figure in memory, for its metrics. A figure
// is published — written to status.volume.usage and acted on — only when it changes
// meaningfully, which bounds the API writes:
//   - the first figure of a node, and one whose capacity differs (a grown file system);
//   - the bytes in use moved by at least one percent of the capacity;
//   - the server's persistence state changed (a save started or stopped failing);
//   - no figure for UnmeasuredAfter (the pod is gone or does not answer), and back;
//   - the published figure is RefreshAfter old (so measuredAt says it is still true).
const (
	// RefreshAfter is the age at which an unchanged figure is published again.
	RefreshAfter = time.Hour
	// UnmeasuredAfter is how long without a figure makes a node's usage unknown.
	UnmeasuredAfter = 30 * time.Second
	// fetchTimeout bounds one read of a pod's metrics.
	fetchTimeout = 2 * time.Second
	// fetchWorkers is how many pods are read at once.
	fetchWorkers = 8
)

// nodeUsage is what the controller knows of one node's /data.
type nodeUsage struct {
	latest    volumeusage.Figure
	published volumeusage.Figure
	// measured: published holds a figure of a pod that answers; false once none came for
	// UnmeasuredAfter.
	measured bool
	// lastErr is why the last read failed ("" when it did not).
	lastErr string
}

// usageStore holds every node's figures, safe for the poller and the reconciles.
type usageStore struct {
	mu    sync.Mutex
	nodes map[types.NamespacedName]*nodeUsage
}

func newUsageStore() *usageStore {
	return &usageStore{nodes: map[types.NamespacedName]*nodeUsage{}}
}

// get returns a copy of a node's figures (nil when none was ever taken).
func (s *usageStore) get(key types.NamespacedName) *nodeUsage {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.nodes[key]
	if !ok {
		return nil
	}
	c := *u
	return &c
}

// seed takes a node's status.volume.usage as its published figure when the store has none
// (a restarted controller), so that an unchanged volume is not written again.
func (s *usageStore) seed(key types.NamespacedName, u *valkeyv1.VolumeUsage, now time.Time) {
	if u == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.nodes[key]; ok {
		return
	}
	fig := volumeusage.Figure{UsedBytes: u.UsedBytes, CapacityBytes: u.CapacityBytes, Persistence: u.Persistence, At: u.MeasuredAt.Time}
	// latest is as of now: a pod that does not answer gets UnmeasuredAfter from the seed.
	latest := fig
	latest.At = now
	s.nodes[key] = &nodeUsage{latest: latest, published: fig, measured: true}
}

// record stores a figure (or why there is none: err) and tells whether the published one
// changed.
func (s *usageStore) record(key types.NamespacedName, fig volumeusage.Figure, err error, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.nodes[key]
	if !ok {
		u = &nodeUsage{}
		s.nodes[key] = u
	}
	if err != nil {
		u.lastErr = err.Error()
		if u.measured && now.Sub(u.latest.At) >= UnmeasuredAfter {
			u.measured = false
			return true
		}
		return false
	}
	u.lastErr = ""
	u.latest = fig
	if u.measured && !meaningful(u.published, fig) {
		return false
	}
	u.published, u.measured = fig, true
	return true
}

// meaningful tells whether fig differs enough from the published one to be published.
func meaningful(published, fig volumeusage.Figure) bool {
	d := fig.UsedBytes - published.UsedBytes
	step := max(published.CapacityBytes/100, 1)
	return d >= step || d <= -step || fig.CapacityBytes != published.CapacityBytes ||
		fig.Persistence != published.Persistence || fig.At.Sub(published.At) >= RefreshAfter
}

// forget drops the nodes not in keep.
func (s *usageStore) forget(keep map[types.NamespacedName]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.nodes {
		if !keep[k] {
			delete(s.nodes, k)
		}
	}
}

// each calls fn for every node's latest figure (for the metrics).
func (s *usageStore) each(fn func(types.NamespacedName, nodeUsage)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, u := range s.nodes {
		fn(k, *u)
	}
}

// usagePoller reads every node's figure each interval and wakes the node's reconcile when
// its published figure changed. It runs on the leader only.
type usagePoller struct {
	reader   client.Reader
	store    *usageStore
	interval time.Duration
	port     int
	http     *http.Client
	wake     chan event.GenericEvent
}

func newUsagePoller(reader client.Reader, store *usageStore, interval time.Duration, port int) *usagePoller {
	return &usagePoller{
		reader: reader, store: store, interval: interval, port: port,
		http: &http.Client{Timeout: fetchTimeout, CheckRedirect: noRedirect, Transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: fetchTimeout}).DialContext,
			MaxIdleConnsPerHost: 1, IdleConnTimeout: 3 * interval, DisableCompression: true,
		}},
		wake: make(chan event.GenericEvent, 1024),
	}
}

// noRedirect keeps a read on the pod it was meant for.
func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// NeedLeaderElection: only the leader reads the pods (its reconciles act on the figures).
func (p *usagePoller) NeedLeaderElection() bool { return true }

// Start polls until ctx ends.
func (p *usagePoller) Start(ctx context.Context) error {
	tick := time.NewTicker(p.interval)
	defer tick.Stop()
	for {
		p.round(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// round reads every node with persistence once, fetchWorkers at a time. The cached nodes
// are read in place (no copy of every node per round): nothing here changes them.
func (p *usagePoller) round(ctx context.Context) {
	var nodes valkeyv1.ValkeyNodeList
	if err := p.reader.List(ctx, &nodes, client.UnsafeDisableDeepCopy); err != nil {
		log.FromContext(ctx).Error(err, "list ValkeyNodes to measure their volumes")
		return
	}
	keep := map[types.NamespacedName]bool{}
	jobs := make(chan *valkeyv1.ValkeyNode)
	var wg sync.WaitGroup
	for range fetchWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range jobs {
				p.measure(ctx, n)
			}
		}()
	}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if n.Spec.Persistence == nil || !n.DeletionTimestamp.IsZero() {
			continue
		}
		keep[client.ObjectKeyFromObject(n)] = true
		jobs <- n
	}
	close(jobs)
	wg.Wait()
	p.store.forget(keep)
}

// measure reads one node's figure and wakes its reconcile when the published one changed.
// A node without a running pod is not read: there is nothing to read, and a volume no pod
// mounts does not change, so what was published stays (a new node stays "no figure taken
// yet" until its pod runs, rather than changing its message once the first round passes).
func (p *usagePoller) measure(ctx context.Context, n *valkeyv1.ValkeyNode) {
	key := client.ObjectKeyFromObject(n)
	if v := n.Status.Volume; v != nil {
		p.store.seed(key, v.Usage, time.Now())
	}
	w := n.Status.Workload
	if w == nil || w.PodIP == "" {
		return
	}
	url := "http://" + net.JoinHostPort(w.PodIP, strconv.Itoa(p.port)) + volumeusage.Path
	fig, err := volumeusage.Fetch(ctx, p.http, url)
	usageFetches.WithLabelValues(fetchResult(err)).Inc()
	if p.store.record(key, fig, err, time.Now()) {
		usagePublished.Inc()
		select {
		case p.wake <- event.GenericEvent{Object: n}:
		case <-ctx.Done():
		}
	}
}

func fetchResult(err error) string {
	if err != nil {
		return "error"
	}
	return "ok"
}
