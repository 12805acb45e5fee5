package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ValkeyBackupSpec names the cluster to back up. A backup is taken once: every field is
// fixed at creation.
//
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="a ValkeyBackup's spec is fixed at creation: create another backup instead"
type ValkeyBackupSpec struct {
	// ClusterName is the ValkeyCluster, in the backup's namespace, to back up. It must have
	// persistence.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	ClusterName string `json:"clusterName"`

	// VolumeSnapshotClassName is the class of the VolumeSnapshots. Default: the
	// VolumeSnapshotClass marked default whose driver is the claims' provisioner.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	VolumeSnapshotClassName *string `json:"volumeSnapshotClassName,omitempty"`
}

// BackupPhase is where a backup is in its life.
//
// +kubebuilder:validation:Enum=Pending;Saving;Snapshotting;Completed;Failed
type BackupPhase string

const (
	// BackupPending is waiting for the cluster (missing, busy, or another backup of it).
	BackupPending BackupPhase = "Pending"
	// BackupSaving is while BGSAVE runs on one node per shard.
	BackupSaving BackupPhase = "Saving"
	// BackupSnapshotting is when every shard's point is saved and the volumes are being snapshotted.
	BackupSnapshotting BackupPhase = "Snapshotting"
	// BackupCompleted is when every shard's snapshot is ready to use. Final.
	BackupCompleted BackupPhase = "Completed"
	// BackupFailed is when the backup cannot be completed; Ready says why. Final.
	BackupFailed BackupPhase = "Failed"
)

// BackupShard is what a backup holds of one shard.
type BackupShard struct {
	// Shard is the shard index.
	Shard int32 `json:"shard"`
	// Node is the ValkeyNode whose claim was snapshotted.
	// +optional
	Node string `json:"node,omitempty"`
	// ReplicaIndex of that node: a restore puts the snapshot on the same index.
	// +optional
	ReplicaIndex int32 `json:"replicaIndex,omitempty"`
	// NodeID is that node's Valkey node ID when it was saved.
	// +optional
	NodeID string `json:"nodeID,omitempty"`
	// SnapshotName is the VolumeSnapshot of that node's claim.
	// +optional
	SnapshotName string `json:"snapshotName,omitempty"`
	// Size is the snapshot's restore size.
	// +optional
	Size string `json:"size,omitempty"`
	// Offset is the shard primary's replication offset at the saved point: every write the
	// primary had applied by then is in the snapshot.
	// +optional
	Offset int64 `json:"offset,omitempty"`
	// SavedAt is the time of the saved point: every write acknowledged by the primary
	// before it is in the snapshot.
	// +optional
	SavedAt *metav1.MicroTime `json:"savedAt,omitempty"`
}

// ValkeyBackupStatus is written by the topology controller only.
type ValkeyBackupStatus struct {
	// Phase: Pending, Saving, Snapshotting, Completed or Failed.
	// +optional
	Phase BackupPhase `json:"phase,omitempty"`
	// Conditions: Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// ClusterUID is the UID of the cluster backed up.
	// +optional
	ClusterUID types.UID `json:"clusterUID,omitempty"`
	// ShardCount is the cluster's number of shards when it was backed up; a restore needs
	// the same.
	// +optional
	ShardCount int32 `json:"shardCount,omitempty"`
	// Shards holds one entry per shard once its point is saved.
	// +optional
	// +listType=map
	// +listMapKey=shard
	Shards []BackupShard `json:"shards,omitempty"`
	// StartedAt is when the first BGSAVE was sent.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// CompletedAt is when every snapshot was ready to use.
	// +optional
	CompletedAt *metav1.Time `json:"completedAt,omitempty"`
}

// ValkeyBackup is a crash-consistent backup of a whole cluster: per shard, the volume of one
// node (an in-sync replica where there is one) snapshotted right after a BGSAVE. Deleting it
// deletes its VolumeSnapshots.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=vkb,categories=valkey
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 63",message="a ValkeyBackup's name may have at most 63 characters: it is the label valkey.io/backup of its snapshots"
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterName`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Shards",type=integer,JSONPath=`.status.shardCount`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ValkeyBackup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state of the backup.
	Spec ValkeyBackupSpec `json:"spec"`
	// Status is what the controllers observed of the backup; only they write it.
	Status ValkeyBackupStatus `json:"status,omitempty"`
}

// ValkeyBackupList is a list of ValkeyBackups.
//
// +kubebuilder:object:root=true
type ValkeyBackupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the ValkeyBackups.
	Items []ValkeyBackup `json:"items"`
}

// GetConditions returns the backup's status conditions.
func (b *ValkeyBackup) GetConditions() []metav1.Condition { return b.Status.Conditions }

// Finished tells whether the backup completed or failed: nothing more happens to it.
func (b *ValkeyBackup) Finished() bool {
	return b.Status.Phase == BackupCompleted || b.Status.Phase == BackupFailed
}

// ValkeyBackupScheduleSpec is when to back a cluster up and how many backups to keep.
type ValkeyBackupScheduleSpec struct {
	// ClusterName is the ValkeyCluster, in the schedule's namespace, to back up.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="clusterName is fixed: create another schedule"
	ClusterName string `json:"clusterName"`

	// Schedule is a cron expression of five fields (minute hour day-of-month month
	// day-of-week), in UTC, e.g. "0 3 * * *".
	// +kubebuilder:validation:MinLength=9
	// +kubebuilder:validation:MaxLength=100
	// +kubebuilder:validation:XValidation:rule="self.split(' ').filter(f, f != '').size() == 5",message="schedule must have five fields: minute hour day-of-month month day-of-week"
	// +kubebuilder:validation:XValidation:rule="self.matches('^[0-9*/,A-Za-z -]+$')",message="schedule may hold only digits, letters, and * / , -"
	Schedule string `json:"schedule"`

	// Retention is how many completed backups of this schedule are kept; older ones are
	// deleted with their snapshots.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	Retention int32 `json:"retention"`

	// Suspend stops new backups; retention still applies.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// VolumeSnapshotClassName is passed to every backup.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	VolumeSnapshotClassName *string `json:"volumeSnapshotClassName,omitempty"`
}

// ValkeyBackupScheduleStatus is written by the topology controller only.
type ValkeyBackupScheduleStatus struct {
	// LastScheduleTime is the scheduled time of the newest backup created.
	// +optional
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`
	// LastBackup is the name of the newest backup created.
	// +optional
	LastBackup string `json:"lastBackup,omitempty"`
	// Conditions: Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ValkeyBackupSchedule creates ValkeyBackups of a cluster on a cron schedule and keeps the
// newest few.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=vkbs,categories=valkey
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 54",message="a ValkeyBackupSchedule's name may have at most 54 characters: its backups are named <schedule>-<unix minute> (9 more), and a backup's name is a label value (63)"
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterName`
// +kubebuilder:printcolumn:name="Schedule",type=string,JSONPath=`.spec.schedule`
// +kubebuilder:printcolumn:name="Retention",type=integer,JSONPath=`.spec.retention`
// +kubebuilder:printcolumn:name="Last Backup",type=string,JSONPath=`.status.lastBackup`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ValkeyBackupSchedule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state of the schedule.
	Spec ValkeyBackupScheduleSpec `json:"spec"`
	// Status is what the controllers observed of the schedule; only they write it.
	Status ValkeyBackupScheduleStatus `json:"status,omitempty"`
}

// ValkeyBackupScheduleList is a list of ValkeyBackupSchedules.
//
// +kubebuilder:object:root=true
type ValkeyBackupScheduleList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the ValkeyBackupSchedules.
	Items []ValkeyBackupSchedule `json:"items"`
}

// GetConditions returns the schedule's status conditions.
func (s *ValkeyBackupSchedule) GetConditions() []metav1.Condition { return s.Status.Conditions }

// RestoreIdentity says whether a restored node keeps the Valkey node ID of the node it was
// backed up from.
//
// +kubebuilder:validation:Enum=Keep;Fresh
type RestoreIdentity string

const (
	// RestoreKeep is for a restore into the cluster of the same name: the node keeps its ID and
	// forgets every other member.
	RestoreKeep RestoreIdentity = "Keep"
	// RestoreFresh is for a restore under another name: the node starts with a new ID and no
	// members, so it can never join the backed-up cluster.
	RestoreFresh RestoreIdentity = "Fresh"
)

// NodeRestore is set by the topology controller on the one node per shard that starts from
// a backup's snapshot.
type NodeRestore struct {
	// Backup is the ValkeyBackup restored from.
	Backup string `json:"backup"`
	// SnapshotName is the VolumeSnapshot the node's claim is created from. Dropped once the
	// cluster is restored, so a claim made later starts empty.
	// +optional
	SnapshotName string `json:"snapshotName,omitempty"`
	// Identity: Keep or Fresh.
	Identity RestoreIdentity `json:"identity"`
}

// SavedPoint is what the topology controller saved on a node for a backup: the volume
// controller snapshots the node's claim once it is set.
type SavedPoint struct {
	// Backup is the ValkeyBackup's name.
	Backup string `json:"backup"`
	// BackupUID owns the snapshot.
	BackupUID types.UID `json:"backupUID"`
	// VolumeSnapshotClassName is the backup's class, when it names one.
	// +optional
	VolumeSnapshotClassName string `json:"volumeSnapshotClassName,omitempty"`
	// Offset is the shard primary's replication offset at the saved point.
	// +optional
	Offset int64 `json:"offset,omitempty"`
	// SavedAt is the time of the saved point.
	SavedAt metav1.MicroTime `json:"savedAt"`
}

// SnapshotStatus is the volume controller's account of a node's snapshot for a backup.
type SnapshotStatus struct {
	// Name of the VolumeSnapshot.
	Name string `json:"name"`
	// Backup it belongs to.
	Backup string `json:"backup"`
	// ReadyToUse is the VolumeSnapshot's readyToUse.
	// +optional
	ReadyToUse bool `json:"readyToUse,omitempty"`
	// RestoreSize is the VolumeSnapshot's restore size.
	// +optional
	RestoreSize string `json:"restoreSize,omitempty"`
	// CreationTime is the VolumeSnapshot's creationTime: when it was cut. The volume's
	// content in the snapshot is fixed from then, before it may be ready to use.
	// +optional
	CreationTime *metav1.Time `json:"creationTime,omitempty"`
}
