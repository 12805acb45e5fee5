package topologycontroller

import (
	"context"
	"errors"
	"net"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// What the controller did to each ValkeyCluster, counted where it does it (docs/contract.md,
// "Topology controller: metrics"). Every replica counts its own work: sum by namespace and
// cluster across the controller's pods. What a cluster is (Ready, shards, slots, rolls
// pending, backups) is read at each scrape by clusterCollector (metricscollector.go).
var (
	clusterLabels = []string{"namespace", "cluster"}

	failovers = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "valkey_cluster_failovers_total",
		Help: "Failovers the topology controller ordered, by result: started (FailingOver), completed (FailedOver), stalled (FailoverStalled).",
	}, append(clusterLabels, "result"))
	takeovers = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "valkey_cluster_failover_takeovers_total",
		Help: "Replicas the topology controller made primary with CLUSTER FAILOVER TAKEOVER because their primary's pod was gone and the shard did not elect one (FailoverTakeover: the crash fencing of a lost primary).",
	}, clusterLabels)
	migrations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "valkey_cluster_migrations_total",
		Help: "Slot migrations, by result: started (Migrating), completed (Migrated: slots balanced), failed (MigrationFailed), stalled (MigrationStalled).",
	}, append(clusterLabels, "result"))
	rollsApproved = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "valkey_cluster_roll_approvals_total",
		Help: "Pod restarts the topology controller approved (RollApproved), one node at a time.",
	}, clusterLabels)
	reconcileErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "valkey_topology_reconcile_errors_total",
		Help: "Reconciles of the topology controller's controllers that returned an error, by reason: the API server's (Conflict, NotFound, Forbidden, ...), Connection (a Valkey server did not answer), Timeout, Other.",
	}, []string{"controller", "reason"})
)

func init() {
	metrics.Registry.MustRegister(failovers, takeovers, migrations, rollsApproved, reconcileErrors, collector)
}

// eventCount is the counter an event reason adds one to, and its result label ("" for none).
type eventCount struct {
	vec    *prometheus.CounterVec
	result string
}

// eventCounters are the events that count something, by reason.
var eventCounters = map[string]eventCount{
	valkeyv1.EventFailingOver:      {failovers, "started"},
	valkeyv1.EventFailedOver:       {failovers, "completed"},
	valkeyv1.EventFailoverStalled:  {failovers, "stalled"},
	valkeyv1.EventFailoverTakeover: {takeovers, ""},
	valkeyv1.EventMigrating:        {migrations, "started"},
	valkeyv1.EventMigrated:         {migrations, "completed"},
	valkeyv1.EventMigrationFailed:  {migrations, "failed"},
	valkeyv1.EventMigrationStalled: {migrations, "stalled"},
	valkeyv1.EventRollApproved:     {rollsApproved, ""},
}

// countEvent adds one to the counter of an event's reason, if it has one.
func countEvent(namespace, cluster, reason string) {
	c, ok := eventCounters[reason]
	if !ok {
		return
	}
	labels := []string{namespace, cluster}
	if c.result != "" {
		labels = append(labels, c.result)
	}
	c.vec.WithLabelValues(labels...).Inc()
}

// countingErrors counts the errors r returns, by reason, under the controller's name.
func countingErrors(name string, r reconcile.Reconciler) reconcile.Reconciler {
	return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		res, err := r.Reconcile(ctx, req)
		if err != nil {
			reconcileErrors.WithLabelValues(name, errorReason(err)).Inc()
		}
		return res, err
	})
}

// errorReason names the kind of a reconcile's error for reconcileErrors.
func errorReason(err error) string {
	if reason := apierrors.ReasonForError(err); reason != "" {
		return string(reason)
	}
	var netErr net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return "Timeout"
	case errors.As(err, &netErr):
		return "Connection"
	}
	return "Other"
}
