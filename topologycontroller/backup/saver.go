package backup

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/topologycontroller/round"
)

// ClusterField indexes ValkeyBackups by spec.clusterName.
const ClusterField = "spec.clusterName"

// Options are the controller's flags for backups.
type Options struct {
	// CatchUpTimeout bounds a replica's catching up with its primary before its BGSAVE
	// (--backup-catch-up-timeout).
	CatchUpTimeout time.Duration
	// CutTimeout bounds the wait for every shard's snapshot to be cut after its point was
	// saved (--backup-cut-timeout).
	CutTimeout time.Duration
}

// Saver runs the backups of the clusters of one controller, within each cluster's round:
// it saves a point on an in-sync replica of every shard (BGSAVE), lets the volume
// controller cut the snapshots, and reports the ValkeyBackup's status and events. It keeps
// one record between rounds: the BGSAVEs under way (saveBook).
type Saver struct {
	Client   client.Client
	Recorder recorder.EventRecorder
	Options  Options
	// Event records the restores' events on the cluster.
	Event round.EventFunc

	saves *saveBook
}

// New is the backups' saver of one controller.
func New(c client.Client, rec recorder.EventRecorder, event round.EventFunc, opts Options) *Saver {
	return &Saver{Client: c, Recorder: rec, Event: event, Options: opts, saves: newSaveBook()}
}

// Round is the backups' part of one reconcile: the observed cluster, and what the backups
// found.
type Round struct {
	*round.State

	// busy says what keeps a backup from starting ("" when nothing): the cluster's status
	// knows (a roll, a migration, a node not ready...).
	busy func() string
	// savedPoints are the saved points the nodes carry for the backup under way, by node
	// name (see Run).
	savedPoints map[string]*valkeyv1.SavedPoint
	// restore is the cluster's restore (nil without spec.restoreFrom); restored its
	// Restored decided this round (see NoteRestore).
	restore  *RestorePlan
	restored *metav1.Condition
}

// NewRound is the backups' part of the round st, restoring as restore says (nil without
// spec.restoreFrom); busy says what keeps a backup from starting.
func NewRound(st *round.State, restore *RestorePlan, busy func() string) *Round {
	return &Round{State: st, restore: restore, busy: busy}
}

// Restored is the cluster's Restored condition decided this round (nil without a restore).
func (st *Round) Restored() *metav1.Condition { return st.restored }

// SavedPoints are the saved points the nodes carry for the backup under way, by node name,
// once Run ran (nil without one).
func (st *Round) SavedPoints() map[string]*valkeyv1.SavedPoint { return st.savedPoints }

// lookAgain asks to reconcile again within d without reporting work in progress on the
// cluster: a backup is not a change of the cluster (its Progressing stays as it is).
func (st *Round) lookAgain(d time.Duration) {
	if st.Requeue == 0 || d < st.Requeue {
		st.Requeue = d
	}
}
