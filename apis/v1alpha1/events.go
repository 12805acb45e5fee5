package v1alpha1

// Event reasons of the workload controller.
const (
	// EventWorkloadCreated (Normal): the node's ConfigMap and StatefulSet or Deployment were
	// created.
	EventWorkloadCreated = "WorkloadCreated"
	// EventRollRequested (Normal): the desired pod template differs from the applied one;
	// the workload waits for RollApproved.
	EventRollRequested = "RollRequested"
	// EventRollApplied (Normal): the new template was applied to the workload.
	EventRollApplied = "RollApplied"
	// EventRollCompleted (Normal): a Ready pod runs the applied template.
	EventRollCompleted = "RollCompleted"
	// EventInvalidConfig (Warning): spec.config was refused; the running workload is left
	// unchanged.
	EventInvalidConfig = "InvalidConfig"
	// EventDrainSkipped (Warning): valkey.io/skip-drain let the workload of a node being
	// deleted go before Drained=True.
	EventDrainSkipped = "DrainSkipped"
	// EventWorkloadDeleted (Normal): the workload and ConfigMap of a drained node being
	// deleted were deleted.
	EventWorkloadDeleted = "WorkloadDeleted"
)
