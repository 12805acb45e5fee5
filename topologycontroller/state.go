package topologycontroller

import (
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"valkey.io/operator/topologycontroller/backup"
	"valkey.io/operator/topologycontroller/migration"
	"valkey.io/operator/topologycontroller/round"
)

// clusterState is one reconcile of a cluster: what it observed (round.State) and what its
// phases found, which the status is made of.
type clusterState struct {
	*round.State
	// moves is the migration phases' part of the round (package migration).
	moves *migration.Round
	// policyRefused says why the API server refused the cluster's NetworkPolicy ("" when
	// it did not).
	policyRefused string
	// serviceRefused says why a Service of the cluster could not be made ("" when both
	// are as wanted).
	serviceRefused string
	// notOwned names the objects of the cluster's names that belong to another (left as
	// they are).
	notOwned []string
	// tlsReady is the cluster's TLSReady decided this round (nil without spec.tls).
	tlsReady *metav1.Condition
	// usersApplied is the cluster's UsersApplied (nil without spec.users).
	usersApplied *metav1.Condition
	// backups is the backups' part of the round (package backup).
	backups *backup.Round
	// headroom is the cluster's VolumeHeadroom (nil without spec.persistence).
	headroom *metav1.Condition
	// config is each node's ConfigApplied decided this round, by node name; configApplied
	// the cluster's (nil when no server answered). See liveconfig.go.
	config        map[string]*metav1.Condition
	configApplied *metav1.Condition
	// forming: some primary runs formingNodeTimeout this round (see formingtimeout.go).
	forming bool
}

func newClusterState(st *round.State, restore *backup.RestorePlan) *clusterState {
	cs := &clusterState{State: st, moves: migration.NewRound(st)}
	cs.backups = backup.NewRound(st, restore, func() string { return clusterBusy(cs) })
	return cs
}

func isNotFound(err error) bool      { return apierrors.IsNotFound(err) }
func isAlreadyExists(err error) bool { return apierrors.IsAlreadyExists(err) }
