package backup

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/requests"
	"valkey.io/operator/internal/requeue"
)

// Reconciler reports the ValkeyBackups whose cluster does not exist (Pending,
// ClusterNotFound: they start once it is created) or went away during the backup (Failed,
// ClusterNotFound). A backup of an existing cluster is run by the cluster's reconcile.
type Reconciler struct {
	client.Client
	Recorder recorder.EventRecorder
}

// Reconcile reports the backup when its cluster is missing or went away during it.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var b valkeyv1.ValkeyBackup
	if err := r.Get(ctx, req.NamespacedName, &b); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if b.Finished() || !b.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	var vc valkeyv1.ValkeyCluster
	err := r.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: b.Spec.ClusterName}, &vc)
	if err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err
	}
	gone := err != nil || !vc.DeletionTimestamp.IsZero()
	if !gone && (b.Status.ClusterUID == "" || b.Status.ClusterUID == vc.UID) {
		return ctrl.Result{}, nil // the cluster's reconcile runs it
	}
	change := backupPending(valkeyv1.ReasonClusterNotFound,
		fmt.Sprintf("the ValkeyCluster %s does not exist in namespace %s: the backup starts once it does", b.Spec.ClusterName, b.Namespace))
	if b.Status.Phase == valkeyv1.BackupSaving || b.Status.Phase == valkeyv1.BackupSnapshotting {
		msg := fmt.Sprintf("the ValkeyCluster %s was deleted during the backup", b.Spec.ClusterName)
		recordBackupEvent(r.Recorder, &b, nil, corev1.EventTypeWarning, valkeyv1.ReasonClusterNotFound, "Backup", "%s", msg)
		change = backupFailed(valkeyv1.ReasonClusterNotFound, msg)
	}
	if err := patchBackup(ctx, r.Client, &b, change); err != nil {
		return requeue.Settle(ctx, client.IgnoreNotFound(err))
	}
	return ctrl.Result{}, nil
}

// BackupsOfCluster maps a ValkeyCluster event to its unfinished backups.
func (r *Reconciler) BackupsOfCluster(ctx context.Context, o client.Object) []reconcile.Request {
	return requests.Of(ctx, r, &valkeyv1.ValkeyBackupList{}, func(b client.Object) bool { return !b.(*valkeyv1.ValkeyBackup).Finished() },
		"the ValkeyBackups of ValkeyCluster "+client.ObjectKeyFromObject(o).String(),
		client.InNamespace(o.GetNamespace()), client.MatchingFields{ClusterField: o.GetName()})
}
