package v1alpha1

// Event reasons of the volume controller (on the ValkeyNode, related to its claim).
const (
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
	// EventAutoGrowing (Normal): the volume's usage passed persistence.autoGrow's threshold;
	// the claim is being grown by the increment.
	EventAutoGrowing = "AutoGrowing"
	// EventAutoGrown (Normal): the file system the pod sees has the grown size.
	EventAutoGrown = "AutoGrown"
	// EventAutoGrowLimitReached (Warning): the usage passed the threshold and the claim is
	// at persistence.autoGrow.maxSize already.
	EventAutoGrowLimitReached = "AutoGrowLimitReached"
	// EventVolumeUnhealthy (Warning): VolumeHealthy became False (full, or persistence
	// failing); EventVolumeHealthy (Normal): it is True again.
	EventVolumeUnhealthy = "VolumeUnhealthy"
	EventVolumeHealthy   = "VolumeHealthy"
	// EventClaimReplaced (Normal): persistence.storageClassName changed while the node's
	// claim was never bound; the empty claim was deleted to be created with the new class.
	EventClaimReplaced = "ClaimReplaced"
	// EventStorageClassImmutable (Warning): persistence.storageClassName changed while the
	// node's claim is bound; the claim keeps its class.
	EventStorageClassImmutable = "StorageClassImmutable"
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
	EventMigrationStalled   = "MigrationStalled"
	EventMigrationSettled   = "MigrationSettled"
	EventFailingOver        = "FailingOver"
	EventFailedOver         = "FailedOver"
	EventRollApproved       = "RollApproved"
	EventRollWithoutReplica = "RollWithoutReplica"
	EventRollFinished       = "RollFinished"
	EventScaledIn           = "ScaledIn"
	// EventReplicaDetached: a node of a shard without a primary followed a primary of
	// another shard; it was made an empty primary for its own shard.
	EventReplicaDetached = "ReplicaDetached"
	// EventKeysNotFlushed (Warning): a primary without slots holds keys its slots' owners do
	// not hold; it is kept out of the cluster instead of being flushed.
	EventKeysNotFlushed = "KeysNotFlushed"
	// EventNetworkPolicyRefused (Warning): the API server refused the cluster's
	// NetworkPolicy; the note has its error.
	EventNetworkPolicyRefused = "NetworkPolicyRefused"
	// EventServiceRefused (Warning): the cluster's client or headless Service could not be
	// made (see ReasonServiceRefused).
	EventServiceRefused = "ServiceRefused"
	// EventObjectNotOwned (Warning): an object of one of the cluster's names belongs to
	// another and is left as it is (see ReasonObjectNotOwned).
	EventObjectNotOwned = "ObjectNotOwned"
	// EventReplicationHeld (Warning, on the ValkeyNode): its server started without nodes.conf
	// (a new node ID, without the data its node may have had) while a replica of its shard
	// still follows a node that is gone: no replica may sync from it until that is settled.
	// EventReplicationReleased (Normal): replicas may sync from it again.
	EventReplicationHeld     = "ReplicationHeld"
	EventReplicationReleased = "ReplicationReleased"
)

// Event reasons of the topology controller about failovers and roll approvals.
const (
	// EventFailoverTakeover (Warning): a replica took over the slots of a primary lost for good
	// with CLUSTER FAILOVER TAKEOVER, in a cluster with no majority of primaries left to
	// elect it; the note says why that was safe.
	EventFailoverTakeover = "FailoverTakeover"
	// EventFailoverStalled (Warning): a failover did not complete; it is tried again after a
	// backoff (condition reason FailoverBackoff).
	EventFailoverStalled = "FailoverStalled"
	// EventRollApprovalWithdrawn (Normal): a roll approval given for an earlier generation, or
	// for a role the node no longer has, was withdrawn; the roll is decided again.
	EventRollApprovalWithdrawn = "RollApprovalWithdrawn"
)

// Event reasons of the workload controller. It also records EventDrainSkipped (Warning)
// when valkey.io/skip-drain lets the workload of a node being deleted go before
// Drained=True.
const (
	// EventRollRequested (Normal): the desired pod template differs from the applied one;
	// the workload waits for RollApproved.
	EventRollRequested = "RollRequested"
	// EventRollApplied (Normal): the new template was applied to the workload.
	EventRollApplied = "RollApplied"
	// EventRollCompleted (Normal): a Ready pod runs the applied template.
	EventRollCompleted = "RollCompleted"
	// EventWorkloadRefused (Warning): the API server refused the node's workload as invalid;
	// the note has its error.
	EventWorkloadRefused = "WorkloadRefused"
	// EventInvalidConfig (Warning): spec.config was refused. On a ValkeyNode (workload
	// controller): the running workload is left unchanged. On a ValkeyCluster (topology
	// controller): the config is held from the nodes (ConfigApplied=False, InvalidConfig).
	EventInvalidConfig = "InvalidConfig"
	// EventFailedCreate (Warning): the workload cannot create the node's pod; the message is
	// the workload's own reason (WorkloadReady reason FailedCreate).
	EventFailedCreate = "FailedCreate"
	// EventNodeNotReady (Warning): the pod's Kubernetes node is NotReady or Unknown
	// (WorkloadReady reason NodeNotReady).
	EventNodeNotReady = "NodeNotReady"
	// EventWorkloadDeleted (Normal): the workload and ConfigMap of a drained node being
	// deleted were deleted.
	EventWorkloadDeleted = "WorkloadDeleted"
	// EventWorkloadReplaced (Normal): a StatefulSet made by an earlier release without the
	// cluster's serviceName (immutable) was deleted with its pod orphaned, to be made again
	// with it; the new StatefulSet adopts the running pod.
	EventWorkloadReplaced = "WorkloadReplaced"
	// EventForeignPod (Warning): a pod carries the node's labels but no workload of the node
	// made it (its controller is not, by UID, the node's StatefulSet or a ReplicaSet of its
	// Deployment): it is ignored, its address never reported nor dialed. Sent once per pod.
	EventForeignPod = "ForeignPod"
)

// Event reasons of client access (topology controller, on the ValkeyCluster). A bad input is
// reported with the condition's reason as the event reason (TLSSecretMissing,
// TLSSecretInvalid, CertificateNamesNotCovered, UserSecretMissing, ACLRuleRefused).
const (
	EventServiceCreated      = "ServiceCreated"
	EventCertificateIssued   = "CertificateIssued"
	EventCertificateReloaded = "CertificateReloaded"
	EventUserApplied         = "UserApplied"
	EventUserRemoved         = "UserRemoved"
	EventOperatorUserCreated = "OperatorUserCreated"
)

// Event reasons of backups and restores. Failures use the Ready reason as the event reason
// (PersistenceRequired, SnapshotFailed, SnapshotUnsupported, SaveFailed,
// RestoreSourceMissing, RestoreSourceIncomplete, RestoreRefused; RestoreSourceNotReady and
// RestoreClaimExists on a ValkeyNode, volume controller).
const (
	// EventSnapshotCreated (Normal, ValkeyNode, volume controller).
	EventSnapshotCreated = "SnapshotCreated"
	// EventPointSaved (Normal, ValkeyBackup, topology controller): a shard's BGSAVE finished.
	EventPointSaved = "PointSaved"
	// EventBackupCompleted (Normal, ValkeyBackup).
	EventBackupCompleted = "BackupCompleted"
	// EventBackupCreated (Normal, ValkeyBackupSchedule): a scheduled backup was created.
	EventBackupCreated = "BackupCreated"
	// EventBackupPruned (Normal, ValkeyBackupSchedule): a backup past retention was deleted.
	EventBackupPruned = "BackupPruned"
	// EventBackupSkipped (Warning, ValkeyBackupSchedule): a scheduled time passed without a
	// backup: the schedule's previous backup was unfinished, or its cluster did not exist.
	EventBackupSkipped = "BackupSkipped"
	// EventRestored (Normal, ValkeyCluster).
	EventRestored = "Restored"
	// EventConfigApplied (cluster): changed live keys of spec.config were set on servers
	// with CONFIG SET, without a restart.
	EventConfigApplied = "ConfigApplied"
	// EventConfigRefused (cluster, Warning): a server refused the live keys of spec.config;
	// it runs as it was.
	EventConfigRefused = "ConfigRefused"
	// EventPaused / EventResumed (ValkeyCluster): the cluster (or one of its nodes) was
	// paused with valkey.io/paused, or the pause was lifted.
	EventPaused  = "Paused"
	EventResumed = "Resumed"
	// EventDowngradeRefused / EventVersionUnknown / EventUnknownDirective (ValkeyCluster,
	// Warning): a change of spec.image or spec.config is held from the nodes
	// (VersionRefused, same reason).
	EventDowngradeRefused = ReasonDowngradeRefused
	EventVersionUnknown   = ReasonVersionUnknown
	EventUnknownDirective = ReasonUnknownDirective
)
