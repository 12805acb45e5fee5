package v1alpha1

// Event reasons of the volume controller (on the ValkeyNode, related to its claim).
const (
	EventClaimCreated          = "ClaimCreated"
	EventClaimRecreated        = "ClaimRecreated"
	EventClaimAdopted          = "ClaimAdopted"
	EventClaimConflict         = "ClaimConflict"
	EventClaimReleased         = "ClaimReleased"
	EventClaimDeleted          = "ClaimDeleted"
	EventDrainSkipped          = "DrainSkipped"
	EventResizeStarted         = "ResizeStarted"
	EventResizeFinished        = "ResizeFinished"
	EventResizeFailed          = "ResizeFailed"
	EventExpansionNotSupported = "ExpansionNotSupported"
)

// Event reasons of the topology controller (on the ValkeyCluster, and on the ValkeyNode
// concerned). A password Secret the cluster cannot use is reported with the Ready reason as
// the event reason (PasswordSecretMissing, PasswordKeyMissing, PasswordRejected).
const (
	EventPasswordGenerated  = "PasswordGenerated"
	EventMeet               = "Meet"
	EventReplicate          = "Replicate"
	EventForget             = "Forget"
	EventSlotsAssigned      = "SlotsAssigned"
	EventSlotsReassigned    = "SlotsReassigned"
	EventMigrating          = "Migrating"
	EventMigrated           = "Migrated"
	EventMigrationFailed    = "MigrationFailed"
	EventFailingOver        = "FailingOver"
	EventFailedOver         = "FailedOver"
	EventRollApproved       = "RollApproved"
	EventRollWithoutReplica = "RollWithoutReplica"
	EventRollFinished       = "RollFinished"
	EventScaledIn           = "ScaledIn"
)
