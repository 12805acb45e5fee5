package topologycontroller

import (
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
	"valkey.io/operator/topologycontroller/round"
)

// CommandsSent is how many commands reconciles of this process sent to Valkey servers.
func CommandsSent() int64 { return round.CommandsSent.Load() }

// NewReconciler is a Reconciler outside a manager, for the benchmark's reconciles of a
// settled cluster.
func NewReconciler(c client.Client, rec recorder.EventRecorder, opts Options) *Reconciler {
	r := &Reconciler{
		Client: c, APIReader: c, Recorder: rec, Options: opts.withDefaults(),
		Status: status.NewApplier(c, valkeyv1.FieldManagerTopology),
	}
	r.setUpConcerns()
	return r
}
