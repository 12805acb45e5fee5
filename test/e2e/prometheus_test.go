package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/test/monitoring"
)

// A real Prometheus (E2E_PROMETHEUS: the binary `make prometheus` builds) scrapes the local
// cluster through the two PodMonitors of deploy/monitoring (turned into a plain
// configuration by test/monitoring, the alerts' `for` shortened to 10 s) and evaluates the
// PrometheusRule. With a 3 × 1 persistent cluster that rolls, scales out and backs up, it
// checks what a user of the monitoring would: every metric of docs/metrics.md is scraped,
// every panel of the dashboard returns a series, and the alerts fire on the faults they
// name and resolve after them, each with its times.
var _ = Describe("Prometheus", Label("prometheus"), Ordered, func() {
	var (
		prom    string // http://127.0.0.1:<port>
		cluster *valkeyv1.ValkeyCluster
	)

	BeforeAll(func() {
		bin := os.Getenv("E2E_PROMETHEUS")
		if bin == "" {
			Skip("E2E_PROMETHEUS names the Prometheus binary (make e2e-prometheus)")
		}
		prom = startPrometheus(bin)
		ns := newNamespace("e2e-prom")
		// Prometheus runs on this host: the cluster lets the host's addresses reach the
		// metrics port, as a user names their Prometheus's pods.
		cluster = buildCluster(ns, "mon", 3, 1, persistence("1Gi", expandableClass, valkeyv1.ReclaimDelete))
		cluster.Spec.Network = &valkeyv1.NetworkSpec{MetricsFrom: hostPeers()}
		Expect(k8s.Create(ctx, cluster)).To(Succeed())
		waitReady(cluster, 5*time.Minute)
		writeKeys(cluster, "prom", 1000)
		Eventually(func() int { return len(promQuery(prom, `up{job="valkey-system/valkey-servers"} == 1`)) }).
			WithTimeout(2*time.Minute).WithPolling(2*time.Second).Should(BeNumerically(">=", 6), "every Valkey pod scraped")
	})

	It("scrapes every metric docs/metrics.md lists", func() {
		By("what makes the counters count: a roll (failovers, approvals) and a scale-out (slot migrations)")
		startRoll(cluster, "256")
		waitReady(cluster, 10*time.Minute)
		updateCluster(cluster, func(c *valkeyv1.ValkeyCluster) { c.Spec.Shards = 4 })
		waitReady(cluster, 10*time.Minute)
		By("a completed backup, and a cluster with generated TLS (the certificate's expiry)")
		backup := &valkeyv1.ValkeyBackup{ObjectMeta: metav1.ObjectMeta{Name: "prom", Namespace: cluster.Namespace}, Spec: valkeyv1.ValkeyBackupSpec{ClusterName: cluster.Name}}
		Expect(k8s.Create(ctx, backup)).To(Succeed())
		waitBackup(backup, valkeyv1.BackupCompleted, 4*time.Minute)
		tlsCluster := buildCluster(cluster.Namespace, tlsClusterName, 1, 0, nil)
		tlsCluster.Spec.Image, tlsCluster.Spec.TLS = redisTLSImage, &valkeyv1.TLSSpec{Generate: true}
		Expect(k8s.Create(ctx, tlsCluster)).To(Succeed())
		waitReady(tlsCluster, 6*time.Minute)
		for _, name := range documentedMetrics() {
			if reason, ok := notYetSeen[name]; ok {
				GinkgoWriter.Printf("  %s: not required here (%s)\n", name, reason)
				continue
			}
			var n int
			Eventually(func() int { n = len(promQuery(prom, name)); return n }).WithTimeout(time.Minute).WithPolling(5*time.Second).
				Should(BeNumerically(">", 0), name)
			GinkgoWriter.Printf("  %s: %d series\n", name, n)
		}
	})

	It("answers every panel of the dashboard", func() {
		// The dashboard shows one cluster: its TLS panel has data with the TLS cluster chosen.
		for _, p := range dashboardPanels() {
			var q string
			var n int
			Eventually(func() int {
				for _, name := range []string{cluster.Name, tlsClusterName} {
					q = strings.NewReplacer("$namespace", cluster.Namespace, "$cluster", name).Replace(p.expr)
					if n = len(promQuery(prom, q)); n > 0 {
						return n
					}
				}
				return 0
			}).WithTimeout(time.Minute).WithPolling(5*time.Second).Should(BeNumerically(">", 0), "panel %q: %s", p.title, q)
			GinkgoWriter.Printf("  panel %q: %d series: %s\n", p.title, n, q)
		}
	})

	It("fires the alerts on the faults they name and resolves them after", func() {
		expectAlert := func(name string, fault, repair func()) {
			start := time.Now()
			fault()
			Eventually(func() bool { return alertFiring(prom, name) }).WithTimeout(3*time.Minute).WithPolling(2*time.Second).Should(BeTrue(), name+" fires")
			fired := time.Since(start)
			repaired := time.Now()
			repair()
			Eventually(func() bool { return alertFiring(prom, name) }).WithTimeout(5*time.Minute).WithPolling(2*time.Second).Should(BeFalse(), name+" resolves")
			resolved := time.Since(repaired)
			GinkgoWriter.Printf("  %s: fired %s after the fault, resolved %s after the repair\n", name, fired.Round(time.Second), resolved.Round(time.Second))
			AddReportEntry("alert "+name, fmt.Sprintf("fired after %s, resolved after %s", fired.Round(time.Second), resolved.Round(time.Second)))
		}
		host := replicaHost(cluster)
		expectAlert("ValkeyShardWithoutReplica", func() {
			out, err := localCluster("stop-node", strconv.Itoa(kubeNodeIndex(host)))
			Expect(err).NotTo(HaveOccurred(), out)
			DeferCleanup(func() { startKubeNode(host) })
		}, func() {
			startKubeNode(host)
			waitReady(cluster, 10*time.Minute)
		})
		_, primary := replicaAndPrimary(cluster)
		pod := getPod(primary)
		expectAlert("ValkeyVolumeAlmostFull", func() {
			out, err := kubectl("-n", cluster.Namespace, "exec", pod.Name, "-c", "valkey", "--", "kit", "fill", "/data/filler")
			Expect(err).NotTo(HaveOccurred(), out)
		}, func() {
			out, err := kubectl("-n", cluster.Namespace, "exec", pod.Name, "-c", "valkey", "--", "kit", "rm", "/data/filler")
			Expect(err).NotTo(HaveOccurred(), out)
		})
		replicas := topologyReplicas()
		expectAlert("ValkeyOperatorControllerDown", func() { scaleTopology(0) }, func() { scaleTopology(replicas) })
	})
})

// tlsClusterName is the spec's 1 × 0 cluster with generated TLS, beside the 3 × 1 one.
const tlsClusterName = "montls"

// notYetSeen are the documented metrics this spec does not make appear, and why.
var notYetSeen = map[string]string{
	"valkey_cluster_failover_takeovers_total": "a crash takeover (the chaos suite's fault)",
	"valkey_cluster_keys_migrated_total":      "key-by-key migration; Valkey 9.1 migrates atomically",
	"valkey_topology_reconcile_errors_total":  "a reconcile that fails",
}

// documentedMetrics are the metric names in the first column of docs/metrics.md's tables.
func documentedMetrics() []string {
	raw, err := os.ReadFile(filepath.Join(repoRoot(), "docs", "metrics.md"))
	Expect(err).NotTo(HaveOccurred())
	name := regexp.MustCompile("`((?:valkey|redis)_[a-z_]+)")
	var out []string
	seen := map[string]bool{}
	for _, line := range strings.Split(string(raw), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 {
			continue
		}
		for _, m := range name.FindAllStringSubmatch(cells[1], -1) {
			if !seen[m[1]] {
				seen[m[1]] = true
				out = append(out, m[1])
			}
		}
	}
	return out
}

type panel struct{ title, expr string }

// dashboardPanels are the dashboard's panels and their queries.
func dashboardPanels() []panel {
	raw, err := os.ReadFile(filepath.Join(repoRoot(), "deploy", "monitoring", "dashboard.json"))
	Expect(err).NotTo(HaveOccurred())
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	Expect(json.Unmarshal(raw, &d)).To(Succeed())
	var out []panel
	for _, p := range d.Panels {
		for _, t := range p.Targets {
			out = append(out, panel{p.Title, t.Expr})
		}
	}
	return out
}

// startPrometheus runs Prometheus on loopback with the configuration made of deploy/monitoring
// and returns its address; it is stopped when the suite ends.
func startPrometheus(bin string) string {
	dir := GinkgoT().TempDir()
	config, rules, err := monitoring.Config(filepath.Join(repoRoot(), "deploy", "monitoring"),
		monitoring.Options{Kubeconfig: kubeconfig, Interval: "5s", For: "10s", RulesFile: filepath.Join(dir, "rules.yaml")})
	Expect(err).NotTo(HaveOccurred())
	Expect(os.WriteFile(filepath.Join(dir, "prometheus.yml"), config, 0o600)).To(Succeed())
	Expect(os.WriteFile(filepath.Join(dir, "rules.yaml"), rules, 0o600)).To(Succeed())
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	addr := l.Addr().String()
	Expect(l.Close()).To(Succeed())
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr)
	cmd.Stdout, cmd.Stderr = GinkgoWriter, GinkgoWriter
	Expect(cmd.Start()).To(Succeed())
	DeferCleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	base := "http://" + addr
	Eventually(func() error {
		resp, err := http.Get(base + "/-/ready")
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("ready: %s", resp.Status)
		}
		return nil
	}).WithTimeout(time.Minute).Should(Succeed())
	return base
}

// promQuery runs an instant query and returns its series' label sets.
func promQuery(base, q string) []map[string]string {
	resp, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape(q))
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
			} `json:"result"`
		} `json:"data"`
	}
	Expect(json.NewDecoder(resp.Body).Decode(&r)).To(Succeed())
	Expect(r.Status).To(Equal("success"), "%s: %s", q, r.Error)
	out := make([]map[string]string, 0, len(r.Data.Result))
	for _, s := range r.Data.Result {
		out = append(out, s.Metric)
	}
	return out
}

// replicaHost is a Kubernetes node the local cluster can stop (not the first, which holds the
// control plane's address) that runs a replica of c.
func replicaHost(c *valkeyv1.ValkeyCluster) string {
	for _, n := range clusterNodes(c) {
		if n.Status.Topology != nil && n.Status.Topology.Role == valkeyv1.RoleReplica {
			if host := kubeNodeOf(n); kubeNodeIndex(host) >= 2 {
				return host
			}
		}
	}
	Fail("no replica of " + c.Name + " outside the first Kubernetes node")
	return ""
}

// hostPeers are the host's addresses as NetworkPolicy peers, for spec.network.metricsFrom.
func hostPeers() []networkingv1.NetworkPolicyPeer {
	var nodes corev1.NodeList
	Expect(k8s.List(ctx, &nodes)).To(Succeed())
	peers, err := monitoring.HostPeers(len(nodes.Items))
	Expect(err).NotTo(HaveOccurred())
	return peers
}

// alertFiring tells whether Prometheus has the alert firing.
func alertFiring(base, name string) bool {
	for _, a := range promQuery(base, `ALERTS{alertstate="firing", alertname=`+strconv.Quote(name)+`}`) {
		if a["alertname"] == name {
			return true
		}
	}
	return false
}
