package topologycontroller_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// metricOf reads the metric name with every label of want from the controller's registry,
// as a scrape of /metrics would: its value, or nil when no such series is exported.
func metricOf(name string, want map[string]string) func() *float64 {
	return func() *float64 {
		families, err := metrics.Registry.Gather()
		Expect(err).NotTo(HaveOccurred())
		for _, f := range families {
			if f.GetName() != name {
				continue
			}
			for _, m := range f.GetMetric() {
				if hasLabels(m, want) {
					v := m.GetGauge().GetValue() + m.GetCounter().GetValue()
					return &v
				}
			}
		}
		return nil
	}
}

// metricValue is metricOf's value, -1 when the series is absent.
func metricValue(name string, want map[string]string) func() float64 {
	return func() float64 {
		if v := metricOf(name, want)(); v != nil {
			return *v
		}
		return -1
	}
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	found := 0
	for _, l := range m.GetLabel() {
		if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
			found++
		}
	}
	return found == len(want)
}

// with is labels plus one more.
func with(labels map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for lk, lv := range labels {
		out[lk] = lv
	}
	return out
}

var _ = Describe("Metrics", func() {
	It("reports each cluster's state and counts its failovers, roll approvals and slot moves, by namespace and cluster", func() {
		ns := newNamespace()
		f, pw := formCluster(ns, "mx", 1, 1)
		writeKeys(f, pw, 300)
		mx := map[string]string{"namespace": ns, "cluster": "mx"}
		value := func(name string) func() float64 { return metricValue(name, mx) }

		By("a Ready 1 × 1 cluster")
		Eventually(value("valkey_cluster_ready"), 20*time.Second, 200*time.Millisecond).Should(Equal(1.0))
		Expect(value("valkey_cluster_degraded")()).To(Equal(0.0))
		Expect(value("valkey_cluster_shards")()).To(Equal(1.0))
		Expect(value("valkey_cluster_shards_ready")()).To(Equal(1.0))
		Expect(value("valkey_cluster_nodes")()).To(Equal(2.0))
		Expect(value("valkey_cluster_nodes_ready")()).To(Equal(2.0))
		Expect(value("valkey_cluster_slots_assigned")()).To(Equal(16384.0))
		Expect(value("valkey_cluster_rolls_pending")()).To(Equal(0.0))
		Expect(metricValue("valkey_cluster_backups", with(mx, "phase", "Completed"))()).To(Equal(0.0))
		Expect(metricOf("valkey_cluster_last_backup_completed_timestamp_seconds", mx)()).To(BeNil(), "no backup completed yet")
		Expect(metricOf("valkey_cluster_failovers_total", mx)()).To(BeNil(), "no failover yet")

		By("a roll of the primary: approved after a failover")
		primary, replica := valkeyv1.NodeName("mx", 0, 0), valkeyv1.NodeName("mx", 0, 1)
		if getNode(ns, primary).Status.Topology.Role != valkeyv1.RolePrimary {
			primary, replica = replica, primary
		}
		f.hold(true, primary, replica)
		reportWorkload(f, ns, replica, true, false)
		reportWorkload(f, ns, primary, true, true)
		Eventually(value("valkey_cluster_rolls_pending"), 20*time.Second, 200*time.Millisecond).Should(Equal(1.0))
		Eventually(metricValue("valkey_cluster_failovers_total", with(mx, "result", "completed")), 60*time.Second, 200*time.Millisecond).Should(Equal(1.0))
		Expect(metricValue("valkey_cluster_failovers_total", with(mx, "result", "started"))()).To(Equal(1.0))
		Eventually(value("valkey_cluster_roll_approvals_total"), 20*time.Second, 200*time.Millisecond).Should(BeNumerically(">=", 1))
		reportWorkload(f, ns, primary, true, false)
		f.hold(false, primary, replica)
		Eventually(value("valkey_cluster_rolls_pending"), 20*time.Second, 200*time.Millisecond).Should(Equal(0.0))

		By("a scale-out to two shards: half the slots move")
		patchSpec(ns, "mx", `{"shards":2}`)
		Eventually(clusterReady(ns, "mx"), formTimeout).Should(Succeed())
		Eventually(value("valkey_cluster_shards"), 20*time.Second, 200*time.Millisecond).Should(Equal(2.0))
		Expect(value("valkey_cluster_slots_migrated_total")()).To(Equal(8192.0))
		Expect(metricValue("valkey_cluster_migrations_total", with(mx, "result", "started"))()).To(BeNumerically(">=", 1))
		Expect(metricValue("valkey_cluster_migrations_total", with(mx, "result", "completed"))()).To(BeNumerically(">=", 1))
		if serverMajor() < 9 {
			Expect(value("valkey_cluster_keys_migrated_total")()).To(BeNumerically(">", 0), "key by key: the keys of the moved slots")
		}
		Expect(readKeys(f, pw, 300)).To(Equal(300))
		Expect(metricValue("valkey_cluster_ready", map[string]string{"namespace": ns, "cluster": "other"})()).To(Equal(-1.0), "no series for a cluster that does not exist")
	})
})
