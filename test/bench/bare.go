package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// BareWritesPerNode is what the bare client writes for a node: create its ValkeyNode, claim,
// ConfigMap and StatefulSet, and apply its status (VolumeReady) once.
const BareWritesPerNode = 5

// Template is one node's objects as the operator made them, cleaned of server-set metadata,
// as JSON: the bare client creates copies of them, so both create objects of the same size.
type Template struct {
	node                       string
	valkeyNode, claim, cm, sts []byte
	// statuses are the conditions applied to a node's status, each by its own field
	// manager: VolumeReady alone (the bare client), or one per controller writing before the
	// node is fanned out (the contract's floor, see Floor).
	statuses []statusWrite
}

// statusWrite is one status apply of a node: cond, by manager.
type statusWrite struct {
	manager string
	cond    metav1.Condition
}

// Floor is t with the status writes the contract cannot do without in a fan-out: besides
// the volume controller's VolumeReady, the workload controller's WorkloadReady applied by
// a second field manager (each controller writes its own conditions; the finalizer is set
// at creation and the topology controller's status comes later). Its bare fan-out is the
// least the operator's could cost the API server under the contract.
func (t *Template) Floor() *Template {
	f := *t
	volume := t.statuses[0]
	workload := statusWrite{"bench-bare-workload", volume.cond}
	workload.cond.Type = valkeyv1.ConditionWorkloadReady
	f.statuses = []statusWrite{volume, workload}
	return &f
}

// TemplateOf reads node's objects in ns.
func TemplateOf(ctx context.Context, c client.Client, ns, node string) (*Template, error) {
	t := &Template{node: node}
	vn := &valkeyv1.ValkeyNode{}
	objs := []struct {
		obj client.Object
		key string
		out *[]byte
	}{
		{vn, node, &t.valkeyNode},
		{&corev1.PersistentVolumeClaim{}, valkeyv1.ClaimName(node), &t.claim},
		{&corev1.ConfigMap{}, valkeyv1.ConfigMapName(node), &t.cm},
		{&appsv1.StatefulSet{}, valkeyv1.WorkloadName(node), &t.sts},
	}
	for _, o := range objs {
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: o.key}, o.obj); err != nil {
			return nil, err
		}
		if o.obj == vn {
			cond := status.Get(vn.Status.Conditions, valkeyv1.ConditionVolumeReady)
			if cond == nil {
				return nil, fmt.Errorf("%s has no VolumeReady condition", node)
			}
			t.statuses = []statusWrite{{"bench-bare", *cond}}
		}
		b, err := json.Marshal(clean(o.obj))
		if err != nil {
			return nil, err
		}
		*o.out = b
	}
	return t, nil
}

// clean keeps what a client sets on create: labels, annotations and the spec (or data).
func clean(obj client.Object) client.Object {
	obj.SetResourceVersion("")
	obj.SetUID("")
	obj.SetCreationTimestamp(metav1.Time{})
	obj.SetManagedFields(nil)
	obj.SetOwnerReferences(nil)
	obj.SetFinalizers(nil)
	obj.SetGeneration(0)
	switch o := obj.(type) {
	case *valkeyv1.ValkeyNode:
		o.Status = valkeyv1.ValkeyNodeStatus{}
	case *corev1.PersistentVolumeClaim:
		o.Status = corev1.PersistentVolumeClaimStatus{}
	case *appsv1.StatefulSet:
		o.Status = appsv1.StatefulSetStatus{}
	}
	return obj
}

// BareFanOut creates the objects of nodes in ns as the template's copies, on goroutines
// goroutines, each node's writes in order (ValkeyNode first: the others are owned by it). It
// returns the time taken and the number of writes.
func (t *Template) BareFanOut(ctx context.Context, c client.Client, ns string, nodes []string, goroutines int) (time.Duration, int64, error) {
	if err := warmUp(ctx, c, ns); err != nil {
		return 0, 0, err
	}
	var writes atomic.Int64
	start := time.Now()
	err := ForEach(ctx, len(nodes), goroutines, func(ctx context.Context, i int) error {
		return t.createNode(ctx, c, ns, nodes[i], &writes)
	})
	took := time.Since(start)
	if err != nil {
		return 0, 0, err
	}
	return took, writes.Load(), nil
}

// warmUp lists each kind once, so that the client's discovery of them is not timed.
func warmUp(ctx context.Context, c client.Client, ns string) error {
	for _, l := range []client.ObjectList{&valkeyv1.ValkeyNodeList{}, &corev1.PersistentVolumeClaimList{},
		&corev1.ConfigMapList{}, &appsv1.StatefulSetList{}} {
		if err := c.List(ctx, l, client.InNamespace(ns)); err != nil {
			return err
		}
	}
	return nil
}

// createNode makes one node's copy: ValkeyNode, claim, ConfigMap, StatefulSet, status.
func (t *Template) createNode(ctx context.Context, c client.Client, ns, node string, writes *atomic.Int64) error {
	vn := &valkeyv1.ValkeyNode{}
	if err := t.create(ctx, c, ns, node, t.valkeyNode, vn, nil); err != nil {
		return err
	}
	writes.Add(1)
	owner := metav1.OwnerReference{APIVersion: valkeyv1.GroupVersion.String(), Kind: "ValkeyNode",
		Name: vn.Name, UID: vn.UID, Controller: ptrTrue(), BlockOwnerDeletion: ptrTrue()}
	for _, o := range []struct {
		raw []byte
		obj client.Object
	}{{t.claim, &corev1.PersistentVolumeClaim{}}, {t.cm, &corev1.ConfigMap{}}, {t.sts, &appsv1.StatefulSet{}}} {
		if err := t.create(ctx, c, ns, node, o.raw, o.obj, &owner); err != nil {
			return err
		}
		writes.Add(1)
	}
	for _, w := range t.statuses {
		if err := applyStatus(ctx, c, vn, w); err != nil {
			return err
		}
		writes.Add(1)
	}
	return nil
}

// create decodes raw with the template's node name replaced by node into obj and creates it.
func (t *Template) create(ctx context.Context, c client.Client, ns, node string, raw []byte, obj client.Object, owner *metav1.OwnerReference) error {
	raw = bytes.ReplaceAll(raw, []byte(strconv.Quote(t.node)), []byte(strconv.Quote(node)))
	raw = bytes.ReplaceAll(raw, []byte("valkey-"+t.node+"-"), []byte("valkey-"+node+"-"))
	raw = bytes.ReplaceAll(raw, []byte(strconv.Quote("valkey-"+t.node)), []byte(strconv.Quote("valkey-"+node)))
	if err := json.Unmarshal(raw, obj); err != nil {
		return err
	}
	obj.SetNamespace(ns)
	if owner != nil {
		obj.SetOwnerReferences([]metav1.OwnerReference{*owner})
	}
	if err := c.Create(ctx, obj); err != nil {
		return fmt.Errorf("create %T %s/%s: %w", obj, ns, obj.GetName(), err)
	}
	return nil
}

// applyStatus applies w's condition to vn's status as w's manager, as a controller does
// (server-side apply of the status subresource).
func applyStatus(ctx context.Context, c client.Client, vn *valkeyv1.ValkeyNode, w statusWrite) error {
	cond, err := toMap(w.cond)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": valkeyv1.GroupVersion.String(), "kind": "ValkeyNode",
		"metadata": map[string]any{"name": vn.Name, "namespace": vn.Namespace},
		"status":   map[string]any{"conditions": []any{cond}},
	}}
	err = c.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(w.manager), client.ForceOwnership)
	if err != nil {
		return fmt.Errorf("apply status of %s: %w", vn.Name, err)
	}
	return nil
}

func toMap(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	m := map[string]any{}
	return m, json.Unmarshal(b, &m)
}

func ptrTrue() *bool { b := true; return &b }
