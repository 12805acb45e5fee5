package topologycontroller

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/requeue"
	"valkey.io/operator/internal/status"
	"valkey.io/operator/topologycontroller/access"
	"valkey.io/operator/topologycontroller/backup"
	"valkey.io/operator/topologycontroller/certs"
	"valkey.io/operator/topologycontroller/exposure"
	"valkey.io/operator/topologycontroller/failover"
	"valkey.io/operator/topologycontroller/membership"
	"valkey.io/operator/topologycontroller/migration"
	"valkey.io/operator/topologycontroller/roll"
	"valkey.io/operator/topologycontroller/round"
	"valkey.io/operator/topologycontroller/servertls"
	"valkey.io/operator/topologycontroller/serverwatch"
)

// Reconciler reconciles a ValkeyCluster: its ValkeyNodes, its Valkey cluster and the
// topology controller's status on both.
type Reconciler struct {
	client.Client
	// APIReader reads past the cache: the password Secret (no Secret is cached) and the
	// approvals counted before a roll is approved.
	APIReader client.Reader
	Recorder  recorder.EventRecorder
	Options   Options
	Status    status.Applier

	// The concerns in their own packages, made by setUpConcerns: access (it keeps the forms
	// servers list users in), TLS, membership, rolls, slot moves (it
	// keeps the stalled slots between rounds), failovers (the tries under way) and backups
	// (the BGSAVEs under way).
	keeper    *access.Keeper
	tls       *servertls.Servers
	members   *membership.Members
	rolls     *roll.Rolls
	mover     *migration.Mover
	failovers *failover.Failovers
	backups   *backup.Saver
	// converging counts the rounds in a row that found Valkey still converging.
	converging convergeBook
	// live is what live config each server was given (see liveconfig.go).
	live liveBook
	// watch follows the servers of the clusters between rounds (see serverwatch).
	watch *serverwatch.Watcher
}

// Reconcile runs get → delete or normal → ordered phases → one status apply per object.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var vc valkeyv1.ValkeyCluster
	if err := r.Get(ctx, req.NamespacedName, &vc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !vc.DeletionTimestamp.IsZero() {
		// The outside-cluster reconciler reports Drained=True ClusterDeleting on the nodes.
		r.converging.forget(vc.UID)
		r.live.forget(vc.UID)
		r.watch.Forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	if paused, err := r.pause(ctx, &vc); paused || err != nil {
		if paused {
			r.watch.Forget(req.NamespacedName)
		}
		return requeue.Settle(ctx, err)
	}
	res, err := r.reconcileNormal(round.WithSecretMemo(ctx), &vc)
	if err != nil {
		return requeue.Settle(ctx, err)
	}
	return res, nil
}

// reconcileNormal: restore source → passwords and users → ValkeyNodes → observe Valkey → users → phases →
// status.
func (r *Reconciler) reconcileNormal(ctx context.Context, vc *valkeyv1.ValkeyCluster) (ctrl.Result, error) {
	restore, blocked, err := r.backups.PlanRestore(ctx, vc)
	if err != nil {
		return ctrl.Result{}, err
	}
	if blocked != nil {
		return r.reportRestoreBlocked(ctx, vc, blocked)
	}
	ref, password, err := r.keeper.ClusterPassword(ctx, vc)
	if pe := (*access.PasswordError)(nil); errors.As(err, &pe) {
		return r.reportPassword(ctx, vc, pe)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	certificate, err := r.tls.Bundle(ctx, vc)
	if te := (*servertls.Error)(nil); errors.As(err, &te) {
		return r.reportTLS(ctx, vc, te)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	creds, plan, err := r.keeper.Prepare(ctx, vc, password)
	if pe := (*access.PasswordError)(nil); errors.As(err, &pe) {
		return r.reportPassword(ctx, vc, pe)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	nodes, waiting, err := r.fanOut(ctx, vc, ref, restore)
	if err != nil {
		return ctrl.Result{}, err
	}
	cs := round.NewConns(creds, r.Options.DialTimeout, r.Options.CommandTimeout)
	defer cs.Close()
	if certificate != nil {
		cs.UseTLS(certificate.Roots)
	}
	st := newClusterState(round.Observe(ctx, vc, nodes, cs, r.Options.ValkeyPort), restore)
	for _, w := range waiting {
		st.Wait(w, 0) // their deletion wakes the cluster (they name it as their owner)
	}
	if pe := access.PasswordRefused(st.State, ref); pe != nil {
		// Acting on the servers that still answer could misjudge the others as lost.
		return r.reportPassword(ctx, vc, pe)
	}
	r.serverSettings(ctx, st, certificate)
	if err := r.protect(ctx, st); err != nil {
		return ctrl.Result{}, err
	}
	if st.usersApplied, err = r.keeper.ApplyUsers(ctx, st.State, plan); err != nil {
		return ctrl.Result{}, err
	}
	computeJoined(st)
	r.failovers.Settle(st.State)
	if err := r.converge(ctx, st); err != nil && ctx.Err() == nil {
		log.FromContext(ctx).Info("topology step failed; retrying", "error", err.Error())
		st.Progress = append(st.Progress, "retrying: "+err.Error())
		st.Requeue = time.Second
	}
	r.noteRestoreAndStorage(st)
	r.lookAgainWhileConverging(st)
	r.backups.Run(ctx, st.backups)
	st.recheckUsers()
	r.mover.NoteStalls(st.moves)
	r.watch.Watch(client.ObjectKeyFromObject(vc), watchTarget(st.State, creds, certificate))
	return r.finish(ctx, st)
}

// watchTarget is what the server watcher looks at after the round: the servers that
// answered it, as the round dialed them.
func watchTarget(st *round.State, creds round.Credentials, certificate *certs.Bundle) serverwatch.Target {
	t := serverwatch.Target{Creds: creds}
	for _, m := range st.SortedMembers() {
		t.Addrs = append(t.Addrs, m.Addr)
	}
	if certificate != nil {
		t.Roots = certificate.Roots
	}
	return t
}

// noteRestoreAndStorage reports the round's restore (see backup.Saver.NoteRestore) and the nodes' volumes
// (see noteStorage).
func (r *Reconciler) noteRestoreAndStorage(st *clusterState) {
	r.backups.NoteRestore(st.backups)
	r.noteStorage(st)
}

// finish applies the round's status and says when to look again.
func (r *Reconciler) finish(ctx context.Context, st *clusterState) (ctrl.Result, error) {
	if err := r.applyStatus(ctx, st); err != nil {
		return ctrl.Result{}, err
	}
	if ctx.Err() != nil {
		return ctrl.Result{}, ctx.Err()
	}
	if st.Requeue > 0 {
		return ctrl.Result{RequeueAfter: st.Requeue}, nil
	}
	return ctrl.Result{RequeueAfter: r.Options.ResyncPeriod}, nil
}

// serverSettings brings what each server runs without a restart up to date: its TLS
// certificate and the live keys of spec.config.
func (r *Reconciler) serverSettings(ctx context.Context, st *clusterState, certificate *certs.Bundle) {
	if certificate != nil {
		recordCertExpiry(st.Cluster, certificate.Leaf.NotAfter)
	}
	st.tlsReady = r.tls.Reload(ctx, st.State, certificate)
	r.applyLiveConfig(ctx, st)
}

// phase is one step of converge: it reports whether it changed something in Valkey (or
// waits for Valkey), which ends the round.
type phase struct {
	name string
	run  func(context.Context, *clusterState) (bool, error)
}

// converge runs the ordered phases. A phase that acted stops the round: the next reconcile
// observes the result and goes on.
func (r *Reconciler) converge(ctx context.Context, st *clusterState) error {
	underway := r.backups.Underway(ctx, st.backups)
	if underway != "" {
		st.Wait(fmt.Sprintf("slot moves (drain, balance, scale-in) wait for the backup %s to save its points and cut its snapshots", underway), round.Short)
	}
	phases := []phase{
		{"meet", onState(r.members.Meet)},
		{"resume migrations", func(ctx context.Context, st *clusterState) (bool, error) { return r.mover.Resume(ctx, st.moves) }},
		{"hold for restore", func(ctx context.Context, st *clusterState) (bool, error) {
			return r.backups.HoldForRestore(ctx, st.backups)
		}},
		{"take over", onState(r.failovers.TakeOver)},
		{"detach strays", onState(r.members.DetachStray)},
		{"replicate", onState(r.members.Replicate)},
		{"forget", onState(r.members.Forget)},
		{"drain", onState(r.members.Drain)},
		{"slots", func(ctx context.Context, st *clusterState) (bool, error) { return r.mover.Balance(ctx, st.moves) }},
		{"scale in", onState(r.members.ScaleIn)},
		{"rolls", r.approveRolls},
	}
	slotsNext := false // see slotsWithReplicas
	for _, p := range phases {
		if underway != "" && movesSlots(p.name) {
			continue // noted below
		}
		if slotsNext && p.name != "slots" {
			continue
		}
		acted, err := p.run(ctx, st)
		if err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
		if acted {
			// What it changed converges anew: look again at the first pace.
			r.converging.forget(st.Cluster.UID)
			if st.Requeue == 0 {
				st.Requeue = round.Short
			}
		}
		switch {
		case slotsNext: // the slots phase ran after the replicas'
			return nil
		case acted && slotsWithReplicas(st, p.name):
			slotsNext = true
		case acted:
			return nil
		}
	}
	return nil
}

// movesSlots tells the phases that move slots between shards, which wait while a backup
// saves its points.
func movesSlots(phase string) bool {
	return phase == "drain" || phase == "slots" || phase == "scale in"
}

// protect writes what guards and reaches the cluster's pods (package exposure): a
// PodDisruptionBudget per shard, the cluster's NetworkPolicy and its Services; what it could
// not keep goes into the round's status.
func (r *Reconciler) protect(ctx context.Context, st *clusterState) error {
	w := exposure.Writer{Client: r.Client, APIReader: r.APIReader, ClientPort: r.Options.ValkeyPort, OperatorNamespace: r.Options.OperatorNamespace}
	out, err := w.Apply(ctx, st.Cluster, st.Nodes, roundReport{r: r, st: st})
	st.policyRefused, st.serviceRefused = out.PolicyRefused, out.ServiceRefused
	return err
}

// setUpConcerns makes the concerns in their own packages, with the Reconciler's flags and
// events.
func (r *Reconciler) setUpConcerns() {
	secrets := round.SecretReader{Reader: r.APIReader} // each Secret once per round
	r.keeper = &access.Keeper{Client: r.Client, APIReader: secrets, Recorder: r.Recorder}
	r.tls = &servertls.Servers{Client: r.Client, APIReader: secrets, Recorder: r.Recorder, Keeper: r.keeper, ClusterDomain: r.Options.ClusterDomain}
	r.failovers = failover.New(failover.Options{
		Timeout: r.Options.FailoverTimeout, Backoff: r.Options.FailoverBackoff, BackoffMax: r.Options.FailoverBackoffMax,
	}, r.event)
	r.members = &membership.Members{Client: r.Client, DialTimeout: r.Options.DialTimeout, Event: r.event, Failovers: r.failovers}
	r.mover = &migration.Mover{
		Options: migration.Options{
			KeysOnly: r.Options.MigrationMode == MigrationKeys, BatchSize: r.Options.MigrationBatchSize,
			SlotsPerReconcile: r.Options.MigrationSlotsPerReconcile, CommandTimeout: r.Options.CommandTimeout,
		},
		Event: r.event, Flush: r.members.FlushIfHeldElsewhere,
	}
	r.rolls = &roll.Rolls{APIReader: r.APIReader, ValkeyPort: r.Options.ValkeyPort, Event: r.event, Failovers: r.failovers}
	r.backups = backup.New(r.Client, r.Recorder, r.event, backup.Options{CatchUpTimeout: r.Options.BackupCatchUpTimeout, CutTimeout: r.Options.BackupCutTimeout})
}

// onState is a phase of a concern that needs only the round's observation.
func onState(run func(context.Context, *round.State) (bool, error)) func(context.Context, *clusterState) (bool, error) {
	return func(ctx context.Context, st *clusterState) (bool, error) { return run(ctx, st.State) }
}

// approveRolls is the roll phase (package roll) on the round: no primary rolls while slots
// move, and a node's RollApproved is written at once before its failover starts.
func (r *Reconciler) approveRolls(ctx context.Context, st *clusterState) (bool, error) {
	return r.rolls.Approve(ctx, &roll.Round{
		State: st.State, Migrating: st.moves.Found().Migrating,
		ApplyNow: func(ctx context.Context, n *valkeyv1.ValkeyNode, c *metav1.Condition) error {
			return r.applyRollOnly(ctx, st, n, c)
		},
	})
}
