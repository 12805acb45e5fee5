package workloadcontroller

import (
	"context"
	"errors"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/owned"
)

// apply writes the node's ConfigMap and its workload of the desired kind by server-side
// apply, as the controller's field manager. Once the workload is in place, a workload of the
// other kind (left by a workloadType change) is deleted. rollFrom, when not empty, is the
// hash of the template a roll replaces: it is recorded on the workload (AnnotationRollFrom)
// until a Ready pod runs the new template; applying without it removes it. cur.workloads
// is updated.
func (r *Reconciler) apply(ctx context.Context, node *valkeyv1.ValkeyNode, cur *current, want *desired, rollFrom string) error {
	name := valkeyv1.WorkloadName(node.Name)
	if err := r.applyObjects(ctx, node, want, rollFrom, cur.cm == nil && cur.workload() == nil); err != nil {
		return err
	}
	cur.workloads[want.kind] = &workload{kind: want.kind, name: name, hash: want.hash, rollFrom: rollFrom, replicas: 1, serviceName: want.serviceName}
	for kind := range cur.workloads {
		if kind == want.kind {
			continue
		}
		if err := r.deleteObject(ctx, workloadObject(node, kind)); err != nil {
			return err
		}
		delete(cur.workloads, kind)
	}
	return nil
}

// deleteObject deletes obj in the background (its pods go with it); gone is fine.
func (r *Reconciler) deleteObject(ctx context.Context, obj client.Object) error {
	if err := r.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete %T %s: %w", obj, obj.GetName(), err)
	}
	return nil
}

// applyObjects applies the node's ConfigMap, then its workload. For a new node (neither
// exists) both are sent at once: its pod cannot start before its ConfigMap volume exists,
// so no pod runs an older config. Otherwise the ConfigMap goes first, so that a template
// changed for a new config never starts on the old one.
func (r *Reconciler) applyObjects(ctx context.Context, node *valkeyv1.ValkeyNode, want *desired, rollFrom string, fresh bool) error {
	applyCM := func() error {
		if err := owned.ApplyConfiguration(ctx, r.Client, buildConfigMap(node, want.config), valkeyv1.FieldManagerWorkload); err != nil {
			return fmt.Errorf("apply ConfigMap %s: %w", valkeyv1.ConfigMapName(node.Name), err)
		}
		return nil
	}
	applyWL := func() error {
		if err := owned.ApplyConfiguration(ctx, r.Client, buildWorkload(node, want, rollFrom), valkeyv1.FieldManagerWorkload); err != nil {
			return fmt.Errorf("apply %s %s: %w", want.kind, valkeyv1.WorkloadName(node.Name), err)
		}
		return nil
	}
	if !fresh {
		if err := applyCM(); err != nil {
			return err
		}
		return applyWL()
	}
	var wg sync.WaitGroup
	var cmErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		cmErr = applyCM()
	}()
	wlErr := applyWL()
	wg.Wait()
	return errors.Join(cmErr, wlErr)
}
