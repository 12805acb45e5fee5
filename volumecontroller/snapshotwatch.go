package volumecontroller

import (
	"context"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// savedPointChanged passes ValkeyNode updates where status.topology.savedPoint appeared,
// disappeared or names another backup or class (the topology controller's signal to
// snapshot the claim, or to stop reporting it).
func savedPointChanged() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*valkeyv1.ValkeyNode)
			n, ok2 := e.ObjectNew.(*valkeyv1.ValkeyNode)
			if !ok1 || !ok2 {
				return true
			}
			a, b := savedPoint(o), savedPoint(n)
			if a == nil || b == nil {
				return (a == nil) != (b == nil)
			}
			return a.Backup != b.Backup || a.BackupUID != b.BackupUID || a.VolumeSnapshotClassName != b.VolumeSnapshotClassName
		},
	}
}

// snapshotChanged passes VolumeSnapshot creations, deletions and the updates the
// controller reports: readiness, error, restore size, cut time, labels and owners (not the
// snapshot-controller's bookkeeping).
func snapshotChanged() predicate.TypedFuncs[client.Object] {
	return predicate.TypedFuncs[client.Object]{
		UpdateFunc: func(e event.TypedUpdateEvent[client.Object]) bool {
			o, ok1 := e.ObjectOld.(*snapshotv1.VolumeSnapshot)
			n, ok2 := e.ObjectNew.(*snapshotv1.VolumeSnapshot)
			if !ok1 || !ok2 {
				return true
			}
			return !equality.Semantic.DeepEqual(reported(o), reported(n)) ||
				!equality.Semantic.DeepEqual(o.Labels, n.Labels) || !equality.Semantic.DeepEqual(o.OwnerReferences, n.OwnerReferences)
		},
	}
}

// reported is the part of a VolumeSnapshot's status the controller reports.
func reported(vs *snapshotv1.VolumeSnapshot) snapshotv1.VolumeSnapshotStatus {
	if vs.Status == nil {
		return snapshotv1.VolumeSnapshotStatus{}
	}
	st := snapshotv1.VolumeSnapshotStatus{ReadyToUse: vs.Status.ReadyToUse, RestoreSize: vs.Status.RestoreSize, CreationTime: vs.Status.CreationTime}
	if vs.Status.Error != nil {
		st.Error = &snapshotv1.VolumeSnapshotError{Message: vs.Status.Error.Message}
	}
	return st
}

// snapshotToNodes maps a VolumeSnapshot to the node it was taken of (its node label) and
// to the nodes of its namespace that restore from it.
func (r *Reconciler) snapshotToNodes(ctx context.Context, o client.Object) []reconcile.Request {
	var reqs []reconcile.Request
	if node := o.GetLabels()[valkeyv1.LabelNode]; node != "" {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: node}})
	}
	var nodes valkeyv1.ValkeyNodeList
	if err := r.List(ctx, &nodes, client.InNamespace(o.GetNamespace()), client.UnsafeDisableDeepCopy); err != nil {
		log.FromContext(ctx).Error(err, "list ValkeyNodes for a VolumeSnapshot change", "volumeSnapshot", o.GetName())
		return reqs
	}
	for i := range nodes.Items {
		if restoreSnapshot(&nodes.Items[i]) == o.GetName() {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&nodes.Items[i])})
		}
	}
	return reqs
}

// snapshotClassToNodes maps a VolumeSnapshotClass change to the nodes waiting for a
// snapshot (a class may now fit their claim).
func (r *Reconciler) snapshotClassToNodes(ctx context.Context, o client.Object) []reconcile.Request {
	var nodes valkeyv1.ValkeyNodeList
	if err := r.List(ctx, &nodes, client.UnsafeDisableDeepCopy); err != nil {
		log.FromContext(ctx).Error(err, "list ValkeyNodes for a VolumeSnapshotClass change", "volumeSnapshotClass", o.GetName())
		return nil
	}
	var reqs []reconcile.Request
	for i := range nodes.Items {
		if savedPoint(&nodes.Items[i]) != nil {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&nodes.Items[i])})
		}
	}
	return reqs
}
