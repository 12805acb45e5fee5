package topologycontroller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/owned"
	"valkey.io/operator/topologycontroller/backup"
	"valkey.io/operator/topologycontroller/round"
)

// desiredNodeSpec is the spec of node (shard, replica) of vc: its place, and a copy of the
// cluster's server spec naming the password Secret in use.
func desiredNodeSpec(vc *valkeyv1.ValkeyCluster, shard, replica int32, ref *valkeyv1.SecretKeyRef) valkeyv1.ValkeyNodeSpec {
	server := *vc.Spec.ServerSpec.DeepCopy()
	server.PasswordSecret = ref.DeepCopy()
	return valkeyv1.ValkeyNodeSpec{ClusterName: vc.Name, Shard: shard, ReplicaIndex: replica, ServerSpec: server}
}

// fanOutParallelism bounds the ValkeyNodes created or updated at once by one reconcile: a
// cluster of hundreds of nodes is fanned out at the API server's pace, not one round trip
// after another.
const fanOutParallelism = 8

// fanOut creates the missing ValkeyNodes of vc and brings the spec of the existing ones up
// to date (spec.restore: see backup.RestorePlan.NodeRestore), holding their image and config while
// specHeld refuses the cluster's. It returns every ValkeyNode of the cluster (wanted or not, deleting or not).
// Nodes that are no longer wanted are removed by the scale-in phase (membership.Members.ScaleIn) once drained. A node is the
// cluster's when its controller ownerReference has the cluster's UID: a node of the same
// name left by a deleted cluster of the same name is not, and its replacement is created
// once it is gone (waiting lists them meanwhile).
func (r *Reconciler) fanOut(ctx context.Context, vc *valkeyv1.ValkeyCluster, ref *valkeyv1.SecretKeyRef, restore *backup.RestorePlan) (nodes []*valkeyv1.ValkeyNode, waiting []string, err error) {
	var list valkeyv1.ValkeyNodeList
	if err := r.List(ctx, &list, client.InNamespace(vc.Namespace), client.MatchingLabels{valkeyv1.LabelCluster: vc.Name}); err != nil {
		return nil, nil, fmt.Errorf("list ValkeyNodes of %s: %w", vc.Name, err)
	}
	existing := map[string]*valkeyv1.ValkeyNode{}
	foreign := map[string]*valkeyv1.ValkeyNode{}
	for i := range list.Items {
		n := &list.Items[i]
		if n.Spec.ClusterName != vc.Name || !metav1.IsControlledBy(n, vc) {
			foreign[n.Name] = n
			continue
		}
		existing[n.Name] = n
		nodes = append(nodes, n)
	}
	var create []*valkeyv1.ValkeyNode
	var update []specUpdate
	held := specHeld(vc, nodes)
	heldImage, heldConfig, canHold := heldSpec(nodes)
	for shard := int32(0); shard < vc.Spec.Shards; shard++ {
		for replica := int32(0); replica <= vc.Spec.Replicas; replica++ {
			name := valkeyv1.NodeName(vc.Name, shard, replica)
			spec := desiredNodeSpec(vc, shard, replica, ref)
			if held && !canHold {
				continue // no node is made with an image or config refused (VersionRefused, ConfigApplied)
			}
			if held {
				spec.Image, spec.Config = heldImage, maps.Clone(heldConfig)
			}
			n, ok := existing[name]
			spec.Restore = restore.NodeRestore(shard, replica, n)
			switch {
			case !ok && foreign[name] != nil:
				waiting = append(waiting, notOursYet(foreign[name]))
			case !ok:
				n = &valkeyv1.ValkeyNode{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: vc.Namespace}, Spec: spec}
				n.Labels = valkeyv1.NodeLabels(n)
				withVolumeFinalizer(n)
				if err := controllerutil.SetControllerReference(vc, n, r.Scheme()); err != nil {
					return nil, nil, err
				}
				create = append(create, n)
			case n.DeletionTimestamp.IsZero() && !nodeUpToDate(n, spec):
				update = append(update, specUpdate{n, spec})
			}
		}
	}
	created, err := r.createNodes(ctx, vc, create)
	nodes = append(nodes, created...)
	err = errors.Join(err, r.updateNodes(ctx, update))
	if err != nil {
		return nil, nil, err
	}
	round.SortNodes(nodes)
	return nodes, waiting, nil
}

// clusterLive tells whether vc, as the API server has it now (past the cache), still exists
// under the same UID and is not being deleted. A round that read vc from the cache just
// before its deletion would otherwise create again the nodes deleted with it, which nothing
// but the garbage collector would remove (with a claim, a workload and a pod made for
// them meanwhile). It is asked only by a round that has nodes to create.
func (r *Reconciler) clusterLive(ctx context.Context, vc *valkeyv1.ValkeyCluster) (bool, error) {
	var now valkeyv1.ValkeyCluster
	err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(vc), &now)
	if isNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read ValkeyCluster %s before creating its nodes: %w", vc.Name, err)
	}
	return now.UID == vc.UID && now.DeletionTimestamp.IsZero(), nil
}

// withVolumeFinalizer puts the volume controller's finalizer on a new node with persistence,
// so it is born protected and the volume controller need not write the node once more to add
// it (it still adds it to a node made without, and it alone removes it).
func withVolumeFinalizer(n *valkeyv1.ValkeyNode) {
	if n.Spec.Persistence != nil {
		controllerutil.AddFinalizer(n, valkeyv1.PVCProtectionFinalizer)
	}
}

// nodeUpToDate tells whether node n has the desired spec and labels.
func nodeUpToDate(n *valkeyv1.ValkeyNode, spec valkeyv1.ValkeyNodeSpec) bool {
	labels := valkeyv1.NodeLabels(&valkeyv1.ValkeyNode{ObjectMeta: metav1.ObjectMeta{Name: n.Name}, Spec: spec})
	return equality.Semantic.DeepEqual(n.Spec, spec) && owned.HasLabels(n.Labels, labels)
}

// createNodes creates the given ValkeyNodes of vc, fanOutParallelism at once, and returns
// those created; none while vc is not live (see clusterLive). One that already exists is
// skipped: it is not ours, or not in the cache yet, and the next reconcile sees it.
func (r *Reconciler) createNodes(ctx context.Context, vc *valkeyv1.ValkeyCluster, create []*valkeyv1.ValkeyNode) ([]*valkeyv1.ValkeyNode, error) {
	if len(create) == 0 {
		return nil, nil
	}
	if live, err := r.clusterLive(ctx, vc); !live || err != nil {
		return nil, err
	}
	done := make([]bool, len(create))
	err := inParallel(len(create), func(i int) error {
		if err := r.Create(ctx, create[i]); err != nil {
			if isAlreadyExists(err) {
				return nil
			}
			return fmt.Errorf("create ValkeyNode %s: %w", create[i].Name, err)
		}
		done[i] = true
		return nil
	})
	var created []*valkeyv1.ValkeyNode
	for i, n := range create {
		if done[i] {
			created = append(created, n)
		}
	}
	return created, err
}

// specUpdate is an existing ValkeyNode and its desired spec.
type specUpdate struct {
	node *valkeyv1.ValkeyNode
	spec valkeyv1.ValkeyNodeSpec
}

// updateNodes brings the spec and labels of the given ValkeyNodes up to date,
// fanOutParallelism at once; each node is changed in place.
func (r *Reconciler) updateNodes(ctx context.Context, update []specUpdate) error {
	return inParallel(len(update), func(i int) error {
		n := update[i].node
		upd := n.DeepCopy()
		upd.Spec = update[i].spec
		if upd.Labels == nil {
			upd.Labels = map[string]string{}
		}
		for k, v := range valkeyv1.NodeLabels(upd) {
			upd.Labels[k] = v
		}
		if err := r.Update(ctx, upd); err != nil {
			return fmt.Errorf("update ValkeyNode %s: %w", n.Name, err)
		}
		*n = *upd
		return nil
	})
}

// inParallel runs do(0) … do(n-1), fanOutParallelism at once, and joins their errors.
func inParallel(n int, do func(i int) error) error {
	errs := make([]error, n)
	slots := make(chan struct{}, fanOutParallelism)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			errs[i] = do(i)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// notOursYet says why a node of the cluster is not created yet: a ValkeyNode of that name
// belongs to something else, usually a deleted cluster of the same name whose nodes are
// still being drained and released.
func notOursYet(n *valkeyv1.ValkeyNode) string {
	owner := "no ValkeyCluster"
	if ref := metav1.GetControllerOf(n); ref != nil {
		owner = fmt.Sprintf("%s uid %s", ref.Kind, ref.UID)
	}
	state := "it is not being deleted: delete it, or the cluster waits"
	if !n.DeletionTimestamp.IsZero() {
		state = "it is being deleted"
	}
	return fmt.Sprintf("waiting for ValkeyNode %s of %s to go before creating this cluster's node of that name (%s)", n.Name, owner, state)
}
