package v1alpha1

// Field managers: each controller applies status with exactly one of these.
const (
	FieldManagerVolume   = "valkey-volume-controller"
	FieldManagerWorkload = "valkey-workload-controller"
	FieldManagerTopology = "valkey-topology-controller"
)

// The condition types each writer owns: every status apply of that writer carries exactly
// these (see internal/status).
var (
	VolumeConditions   = []string{ConditionVolumeReady, ConditionVolumeSized, ConditionVolumeHealthy}
	WorkloadConditions = []string{ConditionWorkloadReady, ConditionRollPending}
	TopologyConditions = []string{ConditionClusterJoined, ConditionRollApproved, ConditionDrained, ConditionBackupPointSaved, ConditionConfigApplied, ConditionPaused}
	ClusterConditions  = []string{ConditionReady, ConditionProgressing, ConditionDegraded, ConditionSlotsAssigned}
	// AccessConditions are the ValkeyCluster conditions reported only when their part of
	// the spec is set (spec.tls, spec.users, spec.persistence), or, for ConfigApplied, once
	// a server answered, for Paused while the cluster is paused, and for VersionRefused
	// while a change is held.
	AccessConditions = []string{ConditionTLSReady, ConditionUsersApplied, ConditionVolumeHeadroom, ConditionConfigApplied, ConditionPaused, ConditionVersionRefused}
)

// Finalizers.
const (
	// PVCProtectionFinalizer is held by the volume controller on every ValkeyNode with
	// persistence; it is removed once the node is drained and the reclaim policy applied.
	PVCProtectionFinalizer = "valkey.io/pvc-protection"
)

// Volume controller conditions (writer: volume controller).
const (
	// ConditionVolumeReady is True when no persistence is requested (reason Ephemeral) or the
	// node's claim exists, is not terminating, belongs to this node and is Bound or waiting
	// for its first consumer.
	ConditionVolumeReady = "VolumeReady"
	// ConditionVolumeSized is True when the claim's capacity is at least the requested size.
	ConditionVolumeSized = "VolumeSized"

	ReasonEphemeral               = "Ephemeral"
	ReasonBound                   = "Bound"
	ReasonWaitingForFirstConsumer = "WaitingForFirstConsumer"
	ReasonCreating                = "Creating"
	ReasonPending                 = "Pending"
	ReasonStorageClassNotFound    = "StorageClassNotFound"
	ReasonClaimLost               = "ClaimLost"
	ReasonClaimTerminating        = "ClaimTerminating"
	ReasonClaimConflict           = "ClaimConflict"
	// ReasonStorageClassImmutable (VolumeReady=False): persistence.storageClassName names
	// another class than the node's claim, which is bound: a bound claim keeps its class
	// and its data. The claim is left alone; the running pod keeps using it, and no roll is
	// requested until the class is set back.
	ReasonStorageClassImmutable = "StorageClassImmutable"
	// ReasonRestoreSourceNotReady (VolumeReady=False): spec.restore.snapshotName names a
	// VolumeSnapshot that is missing, failed or not ready to use yet (or the VolumeSnapshot
	// API is not installed); the message says which and what the claim waits for. No claim
	// is created until the snapshot is ready, so the node's pod does not start.
	ReasonRestoreSourceNotReady = "RestoreSourceNotReady"
	// ReasonRestoreClaimExists (VolumeReady=False): the node restores spec.restore.snapshotName,
	// but its claim name is taken by a claim not made for this node from that snapshot (one
	// an earlier cluster of the same name retained, for instance). Its data is not the
	// backup's: the claim is neither adopted nor changed nor deleted, so the node's pod does
	// not start; the message names the claim and what to do (delete it, or restore under
	// another name).
	ReasonRestoreClaimExists = "RestoreClaimExists"

	// ConditionVolumeHealthy says whether the node's volume can take its server's writes:
	// True (Healthy; Ephemeral without persistence), False while the server fails to
	// persist (PersistenceFailing: the last BGSAVE or AOF write failed, writes are refused
	// with MISCONF) or the volume is VolumeFullPercent or more full (VolumeFull), Unknown
	// while no figure could be taken (NotMeasured: no pod, or it does not answer).
	ConditionVolumeHealthy = "VolumeHealthy"

	ReasonVolumeHealthy      = "Healthy"
	ReasonVolumeFull         = "VolumeFull"
	ReasonPersistenceFailing = "PersistenceFailing"
	ReasonNotMeasured        = "NotMeasured"
	// ReasonAutoGrown (VolumeSized=True): persistence.autoGrow grew the claim past
	// persistence.size and its capacity has reached what was asked.
	ReasonAutoGrown = "AutoGrown"

	ReasonSized                   = "Sized"
	ReasonLargerThanRequested     = "LargerThanRequested"
	ReasonResizing                = "Resizing"
	ReasonFileSystemResizePending = "FileSystemResizePending"
	ReasonExpansionNotSupported   = "ExpansionNotSupported"
	ReasonResizeFailed            = "ResizeFailed"
)

// Workload controller conditions (writer: workload controller).
const (
	// ConditionWorkloadReady is True when the node's pod runs the current template and is
	// Ready; status.workload then carries the pod name and IP.
	ConditionWorkloadReady = "WorkloadReady"
	// ConditionRollPending is True while the desired pod template differs from the running
	// one and the workload controller waits for RollApproved.
	ConditionRollPending = "RollPending"

	ReasonReady            = "Ready"
	ReasonWaitingForVolume = "WaitingForVolume"
	ReasonPodPending       = "PodPending"
	ReasonPodNotReady      = "PodNotReady"
	// ReasonInvalidConfig: spec.config is refused (internal/valkeyconf; admission refuses
	// it too, but a CRD that predates its rules may have let it through). RollPending=False
	// (WorkloadReady=False too while no workload exists): nothing rolls, a running workload
	// is left unchanged and WorkloadReady follows its pod. ConfigApplied=False (topology):
	// nothing of it is set live.
	ReasonInvalidConfig   = "InvalidConfig"
	ReasonTemplateChanged = "TemplateChanged"
	ReasonRolling         = "Rolling"
	ReasonUpToDate        = "UpToDate"
	// ReasonTerminating: the node is being deleted; its workload is (or is about to be) removed.
	ReasonTerminating = "Terminating"
	// ReasonReplacing (RollPending=False): the node's StatefulSet, made by an earlier release
	// without the serviceName, is being made again with it; a roll, if the template differs,
	// is requested once it is.
	ReasonReplacing = "Replacing"
	// ReasonFailedCreate (WorkloadReady=False): the workload cannot create its pod; the
	// message is the workload's own (the StatefulSet's FailedCreate event, the Deployment's
	// ReplicaFailure condition), for example a quota or a refused pod spec.
	ReasonFailedCreate = "FailedCreate"
	// ReasonNodeNotReady (WorkloadReady=False): the pod's Kubernetes node is NotReady or
	// Unknown; the message names it, says since when, and, when the node's claim is a local
	// volume of that node, what to do if it never returns.
	ReasonNodeNotReady = "NodeNotReady"
	// ReasonWorkloadRefused (RollPending=False; WorkloadReady=False while no workload
	// exists): the API server refused the node's StatefulSet or Deployment as invalid (for
	// example a resource request above its limit); the message has its error, naming the
	// field. A running workload is left unchanged, and WorkloadReady follows its pod.
	ReasonWorkloadRefused = "WorkloadRefused"
)

// Topology controller conditions (writer: topology controller).
const (
	// ConditionClusterJoined is True when the node is a member of its Valkey cluster with a
	// known node ID and role; status.topology carries them.
	ConditionClusterJoined = "ClusterJoined"
	// ConditionRollApproved is True when it is safe to restart this node now for the
	// generation in its observedGeneration and the role its reason names (Approved and
	// FailedOver: owns no slots; ApprovedWithoutReplica: a primary that owns slots).
	ConditionRollApproved = "RollApproved"
	// ConditionDrained is set while the node is being deleted: True once it owns no slots
	// (or needs no drain), False while slots move off it.
	ConditionDrained = "Drained"
	// ConditionConfigApplied (node and cluster) is True when the servers run the live keys
	// of spec.config (valkeyconf.LiveKeys) as the spec gives them, set with CONFIG SET
	// without a restart (reason AppliedLive); False (ConfigRefused) when a server refused
	// them, with its error: it runs as it was, all or nothing; False (InvalidConfig) when
	// spec.config is one the workload controller refuses (an older CRD let it through):
	// nothing of it is applied, and on a cluster it is held from the nodes. The workload
	// controller writes new live values to the node's ConfigMap only once this is True at
	// the node's generation.
	ConditionConfigApplied = "ConfigApplied"
	ReasonAppliedLive      = "AppliedLive"
	ReasonConfigRefused    = "ConfigRefused"
	// ConditionPaused (node and cluster) is True while the cluster or the node carries
	// valkey.io/paused (reason ClusterPaused or NodePaused): no controller changes anything
	// of it (nodes, claims, workloads, Valkey servers), and a node being deleted keeps its
	// finalizer. Absent otherwise. The volume and workload controllers read it on the node.
	ConditionPaused     = "Paused"
	ReasonClusterPaused = "ClusterPaused"
	ReasonNodePaused    = "NodePaused"
	// ConditionVersionRefused (cluster) is True while a change of spec.image or spec.config
	// is held from the nodes (nothing rolls) because the version spec.image's tag names
	// cannot run it: DowngradeRefused (an older major than a server runs, a major alone
	// named will do: its data could not be loaded; valkey.io/allow-downgrade "true" lets it
	// through), VersionUnknown (the image names no version, so it may be such a downgrade;
	// the same annotation lets it through) or UnknownDirective (spec.config names a
	// directive that version does not know). Absent otherwise.
	ConditionVersionRefused = "VersionRefused"
	ReasonDowngradeRefused  = "DowngradeRefused"
	ReasonUnknownDirective  = "UnknownDirective"
	// ReasonVersionUnknown (VersionRefused=True): spec.image changes to an image whose
	// version cannot be read (no tag, a digest alone, a tag such as latest) while the
	// servers report theirs: it may be an older major, whose servers could not load their
	// data. valkey.io/allow-downgrade "true" lets it through.
	ReasonVersionUnknown = "VersionUnknown"
	// ReasonServerUnreachable (ConfigApplied=Unknown): the node's server does not answer;
	// its live keys are set once it does.
	ReasonServerUnreachable = "ServerUnreachable"

	ReasonJoined             = "Joined"
	ReasonWaitingForWorkload = "WaitingForWorkload"
	ReasonMeeting            = "Meeting"
	ReasonReplicating        = "Replicating"
	ReasonNotInCluster       = "NotInCluster"
	// ReasonKeysNotElsewhere (ClusterJoined=False): a primary without slots holds keys of
	// slots whose owners do not hold them (or cannot be asked); it is not flushed to become
	// a replica until they do, or until the user empties it.
	ReasonKeysNotElsewhere = "KeysNotElsewhere"

	ReasonApproved          = "Approved"
	ReasonFailedOver        = "FailedOver"
	ReasonApprovedNoReplica = "ApprovedWithoutReplica"
	ReasonWaitingForTurn    = "WaitingForTurn"
	ReasonFailingOver       = "FailingOver"
	ReasonNotRequested      = "NotRequested"
	// ReasonApprovalWithdrawn (RollApproved=False): an approval given for an earlier
	// generation, or for a role the node no longer has, no longer holds; the roll is decided
	// again.
	ReasonApprovalWithdrawn = "ApprovalWithdrawn"
	// ReasonFailoverBackoff: a failover did not complete (the replica did not take over in
	// time, or refused); the next try waits for a delay that doubles with each failure
	// (RollApproved=False on the node; Progressing=True on the ValkeyCluster).
	ReasonFailoverBackoff = "FailoverBackoff"

	ReasonNoSlots         = "NoSlots"
	ReasonNeverJoined     = "NeverJoined"
	ReasonClusterDeleting = "ClusterDeleting"
	ReasonMigratingSlots  = "MigratingSlots"
	// ReasonPrimaryDown (Drained=False): a replica whose primary is down may hold the
	// shard's last copy; it is kept until the primary is back or it has taken over.
	ReasonPrimaryDown = "PrimaryDown"
)

// ValkeyCluster conditions (writer: topology controller).
const (
	// ConditionReady is True when every wanted node is ready and joined, every shard has
	// its replicas, all 16384 slots are assigned, no slot is moving and every node reports
	// cluster_state ok (reason Ready; NotReady otherwise). Nodes whose Kubernetes node is lost
	// (WorkloadReady reason NodeNotReady) are excused: Ready is True "on the survivors" while
	// every shard's primary serves its slots.
	ConditionReady = "Ready"
	// ConditionProgressing is True while the topology controller has work under way
	// (reasons Forming, MigratingSlots, MigrationStalled, Scaling, Rolling, FailoverBackoff;
	// Settled when False).
	ConditionProgressing = "Progressing"
	// ConditionDegraded is True while some slots are not served (SlotsUnavailable,
	// SlotsUnassigned: slots lost after every slot was assigned, ClusterStateFail,
	// PrimaryRollingWithoutReplica), some nodes are on lost Kubernetes nodes (NodesLost),
	// a member does not answer or its peers see it failing (MembersUnreachable), or a shard
	// serving slots has no replica in sync (ReplicasMissing), a planned restart apart; when
	// False: Healthy, or Forming until every slot is first assigned.
	ConditionDegraded = "Degraded"
	// ConditionSlotsAssigned is True when some primary owns every slot (AllSlotsAssigned;
	// SlotsUnassigned when False).
	ConditionSlotsAssigned = "SlotsAssigned"

	ReasonNotReady         = "NotReady"
	ReasonSettled          = "Settled"
	ReasonForming          = "Forming"
	ReasonScaling          = "Scaling"
	ReasonHealthy          = "Healthy"
	ReasonSlotsUnavailable = "SlotsUnavailable"
	ReasonNoReplicaRoll    = "PrimaryRollingWithoutReplica"
	ReasonClusterStateFail = "ClusterStateFail"
	// ReasonMembersUnreachable (Degraded=True): a node that joined the cluster does not
	// answer the operator, or other members see it failing (PFAIL or FAIL) or not at all;
	// the message names it and, for the latter, who sees it so.
	ReasonMembersUnreachable = "MembersUnreachable"
	// ReasonReplicasMissing (Degraded=True): a shard serving slots has no replica whose
	// link to its primary is up, so one more fault loses its slots; the message names the
	// shards and their primaries.
	ReasonReplicasMissing = "ReplicasMissing"
	// ReasonNodesLost (Degraded=True): some wanted nodes are not ready because their
	// Kubernetes node is NotReady (WorkloadReady reason NodeNotReady); the message names them.
	// Ready stays True "on the survivors" when every slot is still served.
	ReasonNodesLost = "NodesLost"
	// ReasonVolumeUnhealthy (Degraded=True): some nodes report VolumeHealthy=False (a full
	// volume, or a server that cannot persist and refuses writes); the message names them,
	// their usage and what to do. Every slot may still be served.
	ReasonVolumeUnhealthy = "VolumeUnhealthy"
	// ConditionVolumeHeadroom (with persistence) says whether a node's volume can hold the
	// data set its memory bound allows twice over (one on disk, one being saved): True
	// (Sufficient, or NoMemoryBound when neither maxmemory nor a memory limit bounds it),
	// False (InsufficientHeadroom) naming both figures and what to raise.
	ConditionVolumeHeadroom    = "VolumeHeadroom"
	ReasonSufficientHeadroom   = "Sufficient"
	ReasonNoMemoryBound        = "NoMemoryBound"
	ReasonInsufficientHeadroom = "InsufficientHeadroom"
	ReasonAllSlotsAssigned     = "AllSlotsAssigned"
	ReasonSlotsUnassigned      = "SlotsUnassigned"
	// ReasonMigrationStalled (Progressing=True): keys of a slot could not be moved; the
	// message names the slots and the server's error. They are tried again with backoff.
	ReasonMigrationStalled = "MigrationStalled"
	// ReasonNetworkPolicyRefused (Progressing=True): the API server refused the cluster's
	// NetworkPolicy (a spec.network.clientFrom peer it finds invalid), or a NetworkPolicy of
	// its name belongs to another and is left as it is; the message says which. The servers run and are repaired as before.
	ReasonNetworkPolicyRefused = "NetworkPolicyRefused"
	// ReasonServiceRefused (Progressing=True): the cluster's client or headless Service
	// could not be made: the API server refused it, or a Service of its name belongs to
	// another. The message says which and what to do. The servers run and are repaired as
	// before.
	ReasonServiceRefused = "ServiceRefused"
	// ReasonObjectNotOwned: an object of one of the operator's names exists and is not
	// controlled by the cluster or node; it is left as it is, and the message names it. On a
	// ValkeyCluster (Progressing=True, topology): a shard's PodDisruptionBudget; the servers
	// run and are repaired as before. On a ValkeyNode (WorkloadReady=False, workload): its
	// ConfigMap or StatefulSet (Deployment); no workload is created until it is gone.
	ReasonObjectNotOwned = "ObjectNotOwned"

	// ReasonPasswordSecretMissing (Ready=False): the password Secret does not exist; for the
	// generated Secret, it was deleted while the cluster's servers still use its password.
	ReasonPasswordSecretMissing = "PasswordSecretMissing"
	// ReasonPasswordKeyMissing (Ready=False): the password Secret has no value under its key.
	ReasonPasswordKeyMissing = "PasswordKeyMissing"
	// ReasonPasswordSecretNotOwned (Ready=False): a Secret <cluster>-auth, -operator or -acl
	// exists but is controlled by another object (an earlier ValkeyCluster of the same name
	// that garbage collection has not removed yet), or has no controller while the cluster
	// has no node and is not annotated valkey.io/adopt=true; it is neither used nor replaced.
	ReasonPasswordSecretNotOwned = "PasswordSecretNotOwned"
	// ReasonPasswordRejected (Ready=False): servers refuse the password in the Secret (its
	// value was changed after they started); nothing is done in Valkey until they accept it.
	ReasonPasswordRejected = "PasswordRejected"
)

// ValkeyCluster conditions of client access (writer: topology controller). Each is reported
// only when its part of the spec is set.
const (
	// ConditionTLSReady is True when the cluster's certificate Secret is whole, its
	// certificate covers the names clients use and every node serves it (reason
	// CertificateServed). While False, nothing running changes: no roll is approved and
	// no certificate is reloaded.
	ConditionTLSReady = "TLSReady"
	// ConditionUsersApplied is True when every node has exactly the users of spec.users
	// (reason UsersApplied). While False, the users already applied stay as they are.
	ConditionUsersApplied = "UsersApplied"

	ReasonCertificateServed = "CertificateServed"
	// ReasonTLSSecretMissing (TLSReady=False): tls.secretName names no Secret.
	ReasonTLSSecretMissing = "TLSSecretMissing"
	// ReasonTLSSecretInvalid (TLSReady=False): the Secret lacks tls.crt, tls.key or
	// ca.crt, or one does not parse, or the key does not match the certificate, or the
	// certificate is not signed by ca.crt or has expired.
	ReasonTLSSecretInvalid = "TLSSecretInvalid"
	// ReasonTLSSecretNotOwned (TLSReady=False): with tls.generate, the Secret <cluster>-ca or
	// <cluster>-tls exists and is not controlled by the cluster (someone else's Secret of that
	// name): it is neither used nor overwritten, and nothing running changes.
	ReasonTLSSecretNotOwned = "TLSSecretNotOwned"
	// ReasonCertificateNamesNotCovered (TLSReady=False): the certificate does not cover
	// some name clients use; the message lists them.
	ReasonCertificateNamesNotCovered = "CertificateNamesNotCovered"
	// ReasonCertificateReloading (TLSReady=False): a renewed certificate is being loaded by
	// the servers (without a restart).
	ReasonCertificateReloading = "CertificateReloading"

	ReasonUsersApplied = "UsersApplied"
	// ReasonUserSecretMissing (UsersApplied=False): a user's password Secret, or its key, is
	// missing.
	ReasonUserSecretMissing = "UserSecretMissing"
	// ReasonACLRuleRefused (UsersApplied=False): Valkey refused a user's rules; the message
	// has the user and the server's error.
	ReasonACLRuleRefused = "ACLRuleRefused"
	// ReasonApplyingUsers (UsersApplied=False): users are being applied to the nodes.
	ReasonApplyingUsers = "ApplyingUsers"
)

// Backup and restore conditions.
const (
	// ConditionBackupPointSaved (ValkeyNode, writer: topology controller) is True while
	// status.topology.savedPoint is set: the node's BGSAVE for that backup has finished and
	// its claim may be snapshotted. Absent otherwise.
	ConditionBackupPointSaved = "BackupPointSaved"
	ReasonSaved               = "Saved"

	// ConditionSnapshotReady (ValkeyNode, writer: volume controller) is reported while
	// status.topology.savedPoint is set: True once the node's VolumeSnapshot for that backup
	// is ready to use.
	ConditionSnapshotReady = "SnapshotReady"
	ReasonSnapshotReady    = "SnapshotReady"
	// ReasonSnapshotPending (SnapshotReady=False): the VolumeSnapshot is being taken.
	ReasonSnapshotPending = "SnapshotPending"
	// ReasonSnapshotCut (SnapshotReady=False): the VolumeSnapshot was cut (it has a
	// creationTime: the volume's content in it is fixed) and the driver is still making it
	// ready to use (an upload, say). The backup no longer holds slot moves for it.
	ReasonSnapshotCut = "SnapshotCut"
	// ReasonSnapshotFailed (SnapshotReady=False; backup Ready=False): the VolumeSnapshot
	// reports an error; the message has it.
	ReasonSnapshotFailed = "SnapshotFailed"
	// ReasonSnapshotUnsupported (SnapshotReady=False; backup Ready=False): no
	// VolumeSnapshotClass serves the claim's provisioner (or the named class is missing or
	// of another driver), or the VolumeSnapshot API is not installed.
	ReasonSnapshotUnsupported = "SnapshotUnsupported"

	// ValkeyBackup Ready reasons (writer: topology controller). True: Completed.
	ReasonBackupCompleted = "Completed"
	// ReasonClusterNotFound (Pending): the cluster does not exist (yet).
	ReasonClusterNotFound = "ClusterNotFound"
	// ReasonPersistenceRequired (Failed): the cluster has no persistence, so no volume to
	// snapshot.
	ReasonPersistenceRequired = "PersistenceRequired"
	// ReasonWaitingForBackup (Pending): an older backup of the cluster is in progress.
	ReasonWaitingForBackup = "WaitingForBackup"
	// ReasonClusterBusy (Pending): a roll, migration, scale or resize is in progress; the
	// message says which. The backup starts when it ends.
	ReasonClusterBusy = "ClusterBusy"
	// ReasonSaving (Saving): BGSAVE runs on one node per shard.
	ReasonSaving = "Saving"
	// ReasonSnapshotting (Snapshotting): the saved volumes are being snapshotted.
	ReasonSnapshotting = "Snapshotting"
	// ReasonSaveFailed (Failed): BGSAVE failed on a node; the message has the server's error.
	ReasonSaveFailed = "SaveFailed"
	// ReasonSnapshotTimeout (Failed): a shard's VolumeSnapshot was not cut within
	// --backup-cut-timeout of the last saved point; the message names it.
	ReasonSnapshotTimeout = "SnapshotTimeout"
	// ReasonBackupVolumeUnhealthy (Failed): the node a shard is to be saved on reports
	// VolumeHealthy=False (its volume is full, or its server cannot persist), so its BGSAVE
	// cannot succeed; the message names the node and its VolumeHealthy reason and message.
	ReasonBackupVolumeUnhealthy = "VolumeUnhealthy"

	// ConditionRestored (ValkeyCluster with spec.restoreFrom, writer: topology controller):
	// True once every shard's restored node serves its slots on the claim the volume
	// controller reports as made from its snapshot (status.volume.restoredFrom).
	ConditionRestored = "Restored"
	ReasonRestored    = "Restored"
	// ReasonRestoring (Restored=False): the restored nodes are starting from their snapshots.
	ReasonRestoring = "Restoring"
	// ReasonRestoreSourceMissing (Restored=False): restoreFrom names no ValkeyBackup.
	ReasonRestoreSourceMissing = "RestoreSourceMissing"
	// ReasonRestoreSourceIncomplete (Restored=False): the backup is not Completed.
	ReasonRestoreSourceIncomplete = "RestoreSourceIncomplete"
	// ReasonRestoreRefused (Restored=False): the cluster's shards differ from the backup's,
	// a restored node that does not serve yet reports VolumeHealthy=False (VolumeFull,
	// PersistenceFailing), or a restored node's claim name is taken by a claim not made from
	// its snapshot (VolumeReady=False, RestoreClaimExists); the message says which.
	ReasonRestoreRefused = "RestoreRefused"
)

// ValkeyBackupSchedule Ready reasons (writer: topology controller).
const (
	// ReasonScheduled (True): backups are created on the schedule.
	ReasonScheduled = "Scheduled"
	// ReasonSuspended (True): spec.suspend is set.
	ReasonSuspended = "Suspended"
	// ReasonInvalidSchedule (False): the cron expression does not parse; the message has
	// the parser's error.
	ReasonInvalidSchedule = "InvalidSchedule"
	// ReasonClusterNotFound (False) also says the schedule's cluster does not exist (or is
	// being deleted): its scheduled times pass without a backup until it does.
)
