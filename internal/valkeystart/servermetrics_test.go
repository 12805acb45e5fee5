package valkeystart

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"valkey.io/operator/internal/acl"
	"valkey.io/operator/internal/volumeusage"
	"valkey.io/operator/test/valkeyserver"
)

// TestServerMetricsReadAsTheMetricsUser starts a real server as a cluster node's pod does,
// with /metrics served: the page carries the server's own figures under the names the
// ecosystem's dashboards and alerts use, read as the metrics user the auth file creates. That
// user was enough and valkey-start's own connections send nothing their user may not (the
// server's ACL LOG stays empty; on Valkey 8, where COMMANDLOG LEN is not granted, but that),
// and the metrics user reads neither a key nor the config.
func TestServerMetricsReadAsTheMetricsUser(t *testing.T) {
	const opPassword = "op-secret"
	dir := t.TempDir()
	port, err := valkeyserver.FreePort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	metrics := "127.0.0.1:" + strconv.Itoa(port)
	addr := startWithAuth(t, dir, &Wrapper{User: "valkey-operator", Password: opPassword, MetricsAddr: metrics, ServerMetrics: true})
	ctx := context.Background()
	eventually(t, 10*time.Second, "the operator's user is in", func() bool {
		_, err := strAs(ctx, addr, "valkey-operator", opPassword, "CLUSTER", "ADDSLOTSRANGE", "0", "16383")
		return err == nil
	})
	var page string
	eventually(t, 15*time.Second, "redis_up 1 and cluster_state ok on /metrics", func() bool {
		page = metricsPage(metrics)
		return strings.Contains(page, "\nredis_up 1\n") && strings.Contains(page, "\nredis_cluster_state 1\n")
	})
	for _, name := range []string{"redis_connected_clients", "redis_memory_used_bytes", "redis_commands_processed_total",
		"redis_connected_slaves", "redis_master_repl_offset", "redis_cluster_slots_assigned", "redis_cluster_known_nodes",
		"redis_rdb_last_bgsave_status", "redis_aof_last_write_status", "redis_instance_info", "redis_commands_duration_seconds_total",
		"redis_latency_percentiles_usec", "valkey_data_volume_used_bytes", "valkey_data_volume_capacity_bytes"} {
		if !strings.Contains(page, "\n"+name) {
			t.Errorf("/metrics has no %s", name)
		}
	}
	if strings.Contains(page, "redis_config_") {
		t.Errorf("/metrics reports the server's config: CONFIG GET was sent")
	}
	volume := metricsPage(metrics + strings.TrimPrefix(volumeusage.Path, "/metrics"))
	if !strings.Contains(volume, "\nvalkey_data_volume_used_bytes") || strings.Contains(volume, "redis_") {
		t.Errorf("the volume controller's page (%s) should hold the volume's figures alone:\n%s", volumeusage.Path, volume)
	}
	for _, entry := range aclLog(t, addr, opPassword) {
		if entry["username"] != acl.MetricsUser || BinaryMajor(mustBinary(t)) >= 9 || entry["object"] != "commandlog|len" {
			t.Errorf("a command refused to valkey-start's or the exporter's user: ACL LOG %v", entry)
		}
	}
	mpw := acl.MetricsPassword(opPassword)
	for _, cmd := range [][]string{{"GET", "k"}, {"CONFIG", "GET", "masterauth"}, {"KEYS", "*"}} {
		if _, err := strAs(ctx, addr, acl.MetricsUser, mpw, cmd...); err == nil || !strings.Contains(err.Error(), "NOPERM") {
			t.Errorf("the metrics user ran %v: %v, want NOPERM", cmd, err)
		}
	}
}

// metricsPage reads /metrics at addr, with the query that follows addr if any ("" when it
// does not answer).
func metricsPage(addr string) string {
	path := "/metrics"
	if i := strings.Index(addr, "?"); i >= 0 {
		addr, path = addr[:i], path+addr[i:]
	}
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		return ""
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return "\n" + string(b)
}

func mustBinary(t *testing.T) string {
	t.Helper()
	bin, err := valkeyserver.Binary()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// aclLog is the server's ACL LOG, each entry's fields as strings.
func aclLog(t *testing.T, addr, opPassword string) []map[string]string {
	t.Helper()
	s, err := dial(addr, "valkey-operator", opPassword, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	entries, err := s.cl.Do(context.Background(), s.cl.B().Arbitrary("ACL", "LOG").Build()).ToArray()
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]string
	for _, e := range entries {
		fields, err := e.ToArray()
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for i := 0; i+1 < len(fields); i += 2 {
			k, _ := fields[i].ToString()
			v, _ := fields[i+1].ToString()
			m[k] = v
		}
		out = append(out, m)
	}
	return out
}

// BenchmarkServerMetricsScrape is the cost of one scrape of a cluster node's whole /metrics
// (a Prometheus every 30 s): the exporter's INFO ALL, CLUSTER INFO, latency and slow-log
// reads on the server, and the page. It reports the page's size and the CPU time the server
// spent per scrape (its INFO's used_cpu_user + used_cpu_sys before and after).
func BenchmarkServerMetricsScrape(b *testing.B) {
	const opPassword = "op-secret"
	port, err := valkeyserver.FreePort("127.0.0.1")
	if err != nil {
		b.Fatal(err)
	}
	metrics := "127.0.0.1:" + strconv.Itoa(port)
	addr := startWithAuth(b, b.TempDir(), &Wrapper{User: "valkey-operator", Password: opPassword, MetricsAddr: metrics, ServerMetrics: true})
	ctx := context.Background()
	eventually(b, 10*time.Second, "the slots assigned", func() bool {
		_, err := strAs(ctx, addr, "valkey-operator", opPassword, "CLUSTER", "ADDSLOTSRANGE", "0", "16383")
		return err == nil
	})
	eventually(b, 15*time.Second, "redis_up 1", func() bool { return strings.Contains(metricsPage(metrics), "\nredis_up 1\n") })
	serverCPU := func() float64 {
		info, err := strAs(ctx, addr, "valkey-operator", opPassword, "INFO", "cpu")
		if err != nil {
			b.Fatal(err)
		}
		total := 0.0
		for _, l := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(l, "used_cpu_user:"); ok {
				f, _ := strconv.ParseFloat(v, 64)
				total += f
			} else if v, ok := strings.CutPrefix(l, "used_cpu_sys:"); ok {
				f, _ := strconv.ParseFloat(v, 64)
				total += f
			}
		}
		return total
	}
	size := 0
	before := serverCPU()
	b.ReportAllocs()
	for b.Loop() {
		size = len(metricsPage(metrics))
	}
	b.ReportMetric(float64(size), "bytes/page")
	b.ReportMetric((serverCPU()-before)/float64(b.N)*1e6, "server-µs/scrape")
}

// BenchmarkWriterAlone and BenchmarkWriterUnderScrapes are one client's SETs on a cluster
// node's server, without and with valkey-start's whole /metrics scraped ten times a second
// alongside (a Prometheus scraping every 30 s does it 300 times more rarely): the ratio of
// their ns/op is what the exporter costs the writers.
func BenchmarkWriterAlone(b *testing.B) { benchWriter(b, 0) }

func BenchmarkWriterUnderScrapes(b *testing.B) { benchWriter(b, 100*time.Millisecond) }

func benchWriter(b *testing.B, scrapeEvery time.Duration) {
	const opPassword, appPassword = "op-secret", "app-secret"
	dir := b.TempDir()
	aclFile := writeACLFile(b, dir, acl.User{Name: "app", On: true, Hashes: []string{acl.Hash(appPassword)}, Rules: []string{"~*", "+@write", "+@connection"}})
	port, err := valkeyserver.FreePort("127.0.0.1")
	if err != nil {
		b.Fatal(err)
	}
	metrics := "127.0.0.1:" + strconv.Itoa(port)
	addr := startWithAuth(b, dir, &Wrapper{User: "valkey-operator", Password: opPassword, ACLFile: aclFile, MetricsAddr: metrics, ServerMetrics: true})
	ctx := context.Background()
	eventually(b, 10*time.Second, "the slots assigned", func() bool {
		_, err := strAs(ctx, addr, "valkey-operator", opPassword, "CLUSTER", "ADDSLOTSRANGE", "0", "16383")
		return err == nil
	})
	eventually(b, 15*time.Second, "the cluster serves", func() bool {
		_, err := strAs(ctx, addr, "app", appPassword, "SET", "k", "v")
		return err == nil
	})
	s, err := dial(addr, "app", appPassword, time.Second, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.close()
	stop := make(chan struct{})
	if scrapeEvery > 0 {
		done := make(chan struct{})
		defer func() { close(stop); <-done }()
		go func() {
			defer close(done)
			tick := time.NewTicker(scrapeEvery)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
					metricsPage(metrics)
				}
			}
		}()
	}
	value := strings.Repeat("v", 100)
	i := 0
	for b.Loop() {
		i++
		if err := s.cl.Do(ctx, s.cl.B().Set().Key("key:"+strconv.Itoa(i%10000)).Value(value).Build()).Error(); err != nil {
			b.Fatal(err)
		}
	}
}
