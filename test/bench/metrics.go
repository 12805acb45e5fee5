package bench

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// WriteMethods are the HTTP methods counted as API writes.
var WriteMethods = []string{"POST", "PUT", "PATCH", "DELETE"}

// Sample is what a controller's metrics endpoint reported at one time.
type Sample struct {
	// Requests counts client-go requests (rest_client_requests_total) by HTTP method.
	Requests map[string]float64
	// HeapInuse and HeapAlloc are go_memstats_heap_inuse_bytes and go_memstats_heap_alloc_bytes.
	HeapInuse, HeapAlloc float64
	// LeaseWrites are the topology controller's writes of its partition Leases
	// (valkey_partition_lease_writes_total): counted apart, as leader election would be.
	LeaseWrites float64
	// PartitionsHeld is a topology replica's valkey_topology_partitions_held.
	PartitionsHeld float64
	// CPU is the process's CPU time in seconds (process_cpu_seconds_total).
	CPU float64
	// Reconciles and ReconcileSeconds sum controller_runtime_reconcile_total and
	// controller_runtime_reconcile_time_seconds_sum over the process's controllers.
	Reconciles, ReconcileSeconds float64
}

// Writes is the number of write requests (WriteMethods) of the sample, less the partition
// Lease writes: the writes the operator's objects cost.
func (s Sample) Writes() float64 {
	var n float64
	for _, m := range WriteMethods {
		n += s.Requests[m]
	}
	return n - s.LeaseWrites
}

// Minus is the difference of the request counts of s and an earlier sample.
func (s Sample) Minus(earlier Sample) Sample {
	d := Sample{Requests: map[string]float64{}, HeapInuse: s.HeapInuse, HeapAlloc: s.HeapAlloc, LeaseWrites: s.LeaseWrites - earlier.LeaseWrites,
		PartitionsHeld: s.PartitionsHeld, CPU: s.CPU - earlier.CPU,
		Reconciles: s.Reconciles - earlier.Reconciles, ReconcileSeconds: s.ReconcileSeconds - earlier.ReconcileSeconds}
	for m, v := range s.Requests {
		d.Requests[m] = v - earlier.Requests[m]
	}
	return d
}

// String lists the write counts by method.
func (s Sample) String() string {
	parts := make([]string, 0, len(WriteMethods))
	for _, m := range WriteMethods {
		parts = append(parts, fmt.Sprintf("%s %.0f", m, s.Requests[m]))
	}
	if s.LeaseWrites > 0 {
		parts = append(parts, fmt.Sprintf("of which partition Lease writes %.0f (not counted)", s.LeaseWrites))
	}
	return strings.Join(parts, ", ")
}

// Scrape reads the controller's metrics endpoint.
func (c *Controller) Scrape() (Sample, error) {
	resp, err := http.Get("http://" + c.Metrics + "/metrics")
	if err != nil {
		return Sample{}, fmt.Errorf("scrape %s: %w", c.Name, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return Sample{}, fmt.Errorf("scrape %s: status %d", c.Name, resp.StatusCode)
	}
	return ParseMetrics(resp.Body)
}

// ScrapeAll samples every controller of cs, by name.
func ScrapeAll(cs []*Controller) (map[string]Sample, error) {
	out := map[string]Sample{}
	for _, c := range cs {
		s, err := c.Scrape()
		if err != nil {
			return nil, err
		}
		out[c.Name] = s
	}
	return out, nil
}

// ParseMetrics reads the few series a Sample holds from the Prometheus text format.
func ParseMetrics(r io.Reader) (Sample, error) {
	s := Sample{Requests: map[string]float64{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		name, labels, value, ok := splitSeries(line)
		if !ok {
			continue
		}
		switch name {
		case "rest_client_requests_total":
			s.Requests[labelValue(labels, "method")] += value
		case "go_memstats_heap_inuse_bytes":
			s.HeapInuse = value
		case "go_memstats_heap_alloc_bytes":
			s.HeapAlloc = value
		case "valkey_partition_lease_writes_total":
			s.LeaseWrites = value
		case "valkey_topology_partitions_held":
			s.PartitionsHeld = value
		case "process_cpu_seconds_total":
			s.CPU = value
		case "controller_runtime_reconcile_total":
			s.Reconciles += value
		case "controller_runtime_reconcile_time_seconds_sum":
			s.ReconcileSeconds += value
		}
	}
	return s, sc.Err()
}

// splitSeries splits `name{labels} value` (or `name value`).
func splitSeries(line string) (name, labels string, value float64, ok bool) {
	sp := strings.LastIndexByte(line, ' ')
	if sp < 0 {
		return "", "", 0, false
	}
	v, err := strconv.ParseFloat(line[sp+1:], 64)
	if err != nil {
		return "", "", 0, false
	}
	head := line[:sp]
	if i := strings.IndexByte(head, '{'); i >= 0 {
		return head[:i], strings.TrimSuffix(head[i+1:], "}"), v, true
	}
	return head, "", v, true
}

// labelValue is the value of label key in `k="v",k2="v2"`.
func labelValue(labels, key string) string {
	for _, kv := range strings.Split(labels, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if ok && k == key {
			return strings.Trim(v, `"`)
		}
	}
	return ""
}
