package localcluster_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/test/monitoring"
)

// The exporter benchmark's phases: each this long, scraped as a Prometheus would.
const (
	phaseLength    = 60 * time.Second
	scrapeInterval = 15 * time.Second
	writers        = 4 // goroutines writing to each cluster under load
)

// BenchmarkExporterCost measures what serving the server's figures costs each pod: the
// sample twice, with spec.metrics.server on (the default) and off, both scraped every 15 s
// (the whole /metrics page, as the valkey-servers PodMonitor does), first idle, then under
// the same writer on each (SET of 100-byte values, 4 goroutines). It prints the valkey-start
// process's RSS and CPU per pod (read from /proc on this host, where the local cluster's
// containers run) and the writes per second of each cluster.
func BenchmarkExporterCost(b *testing.B) {
	c := clusterClient(b)
	ctx := context.Background()
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		b.Fatal(err)
	}
	peers, err := monitoring.HostPeers(len(nodes.Items))
	if err != nil {
		b.Fatal(err)
	}
	ns := namespace(b, c, "bench-exporter")
	on, off := sample(b, ns), sample(b, ns)
	on.Name, off.Name = "metrics-on", "metrics-off"
	off.Spec.Metrics = &valkeyv1.MetricsSpec{Server: ptr.To(false)}
	for _, vc := range []*valkeyv1.ValkeyCluster{on, off} {
		vc.Spec.Network = &valkeyv1.NetworkSpec{MetricsFrom: peers}
		if err := c.Create(ctx, vc); err != nil {
			b.Fatal(err)
		}
	}
	for _, vc := range []*valkeyv1.ValkeyCluster{on, off} {
		if err := poll(ctx, 10*time.Minute, vc.Name+" Ready", func() (bool, error) { return clusterReady(ctx, c, vc) }); err != nil {
			b.Fatal(err)
		}
	}
	pods := map[string][]corev1.Pod{}
	for _, vc := range []*valkeyv1.ValkeyCluster{on, off} {
		pods[vc.Name] = clusterPods(ctx, b, c, vc)
	}
	for _, phase := range []string{"idle", "writing"} {
		var writes map[string]*atomic.Int64
		stopWriting := func() {}
		if phase == "writing" {
			writes, stopWriting = writeTo(ctx, b, c, pods, on, off)
		}
		before := sampleProcs(b, pods)
		scrapeFor(pods, phaseLength)
		after := sampleProcs(b, pods)
		stopWriting()
		for _, vc := range []*valkeyv1.ValkeyCluster{on, off} {
			rss, cpu := perPod(before[vc.Name], after[vc.Name], phaseLength)
			line := fmt.Sprintf("%s, %s: valkey-start RSS %.1f MiB per pod, CPU %.1f millicores per pod", phase, vc.Name, rss, cpu)
			if writes != nil {
				line += fmt.Sprintf("; %.0f writes/s", float64(writes[vc.Name].Load())/phaseLength.Seconds())
			}
			b.Log(line)
			b.ReportMetric(rss, phase+"-"+vc.Name+"-rss-MiB")
			b.ReportMetric(cpu, phase+"-"+vc.Name+"-cpu-millicores")
		}
	}
}

// clusterPods are the running pods of vc.
func clusterPods(ctx context.Context, b *testing.B, c client.Client, vc *valkeyv1.ValkeyCluster) []corev1.Pod {
	b.Helper()
	var list corev1.PodList
	if err := c.List(ctx, &list, client.InNamespace(vc.Namespace), client.MatchingLabels{valkeyv1.LabelCluster: vc.Name}); err != nil {
		b.Fatal(err)
	}
	if len(list.Items) != int(sampleNodes(vc)) {
		b.Fatalf("%s: %d pods, want %d", vc.Name, len(list.Items), sampleNodes(vc))
	}
	return list.Items
}

// procSample is a valkey-start process's resident memory and CPU time so far.
type procSample struct {
	rssKiB int64
	ticks  int64 // user + system, in clock ticks (100 per second)
}

// sampleProcs reads every pod's valkey-start process, per cluster.
func sampleProcs(b *testing.B, pods map[string][]corev1.Pod) map[string][]procSample {
	b.Helper()
	out := map[string][]procSample{}
	for name, list := range pods {
		for _, p := range list {
			pid, err := valkeyStartPID(p)
			if err != nil {
				b.Fatal(err)
			}
			s, err := readProc(pid)
			if err != nil {
				b.Fatal(err)
			}
			out[name] = append(out[name], s)
		}
	}
	return out
}

// valkeyStartPID finds the pod's valkey-start process among this host's processes: its
// command is valkey-start and its cgroup path names the pod's UID.
func valkeyStartPID(p corev1.Pod) (int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	uid := string(p.UID)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || filepath.Base(strings.SplitN(string(cmd), "\x00", 2)[0]) != "valkey-start" {
			continue
		}
		cg, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cgroup"))
		if err == nil && (strings.Contains(string(cg), uid) || strings.Contains(string(cg), strings.ReplaceAll(uid, "-", "_"))) {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no valkey-start process of pod %s/%s on this host", p.Namespace, p.Name)
}

func readProc(pid int) (procSample, error) {
	var s procSample
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			s.rssKiB, _ = strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, err
	}
	// The fields after the command's closing parenthesis; utime and stime are the 12th and 13th.
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	s.ticks = utime + stime
	return s, nil
}

// perPod is the mean RSS (MiB, at the end) and CPU (millicores over the phase) per pod.
func perPod(before, after []procSample, d time.Duration) (rssMiB, millicores float64) {
	for i := range after {
		rssMiB += float64(after[i].rssKiB) / 1024
		millicores += float64(after[i].ticks-before[i].ticks) * 10 / d.Seconds() // 1 tick = 10 ms
	}
	n := float64(len(after))
	return rssMiB / n, millicores / n
}

// scrapeFor reads every pod's whole /metrics every scrapeInterval for d.
func scrapeFor(pods map[string][]corev1.Pod, d time.Duration) {
	hc := &http.Client{Timeout: 10 * time.Second}
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		next := time.Now().Add(scrapeInterval)
		for _, list := range pods {
			for _, p := range list {
				resp, err := hc.Get("http://" + p.Status.PodIP + ":9121/metrics")
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					_ = resp.Body.Close()
				}
			}
		}
		time.Sleep(min(time.Until(next), time.Until(end)))
	}
}

// writeTo runs the same writer on each cluster (its pods in pods) until stopped, counting
// acknowledged writes.
func writeTo(ctx context.Context, b *testing.B, c client.Client, pods map[string][]corev1.Pod, clusters ...*valkeyv1.ValkeyCluster) (map[string]*atomic.Int64, func()) {
	b.Helper()
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	counts := map[string]*atomic.Int64{}
	value := strings.Repeat("v", 100)
	for _, vc := range clusters {
		vk := dialCluster(ctx, b, c, vc, pods[vc.Name])
		n := &atomic.Int64{}
		counts[vc.Name] = n
		for g := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ctx.Err() == nil; i++ {
					if vk.Do(ctx, vk.B().Set().Key(fmt.Sprintf("k%d-%d", g, i%100000)).Value(value).Build()).Error() == nil {
						n.Add(1)
					}
				}
			}()
		}
		b.Cleanup(vk.Close)
	}
	return counts, func() { cancel(); wg.Wait() }
}

// dialCluster is a cluster-aware client of vc, seeded with its pods' addresses.
func dialCluster(ctx context.Context, b *testing.B, c client.Client, vc *valkeyv1.ValkeyCluster, pods []corev1.Pod) valkey.Client {
	b.Helper()
	var secret corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: vc.Namespace, Name: valkeyv1.PasswordSecretName(vc.Name)}, &secret); err != nil {
		b.Fatal(err)
	}
	var seeds []string
	for _, p := range pods {
		seeds = append(seeds, p.Status.PodIP+":6379")
	}
	vk, err := valkey.NewClient(valkey.ClientOption{InitAddress: seeds, Password: string(secret.Data[valkeyv1.DefaultPasswordKey]), DisableCache: true})
	if err != nil {
		b.Fatal(err)
	}
	return vk
}
