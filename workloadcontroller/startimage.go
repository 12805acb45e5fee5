package workloadcontroller

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// installStartName is the init container that copies valkey-start into the pod.
const installStartName = "install-valkey-start"

// startSeen is the valkey-start image of the template of hash hash, and whether that
// template's probes run valkey-cli (ExecProbes).
type startSeen struct {
	hash, image string
	execProbes  bool
}

// keepStartImage is want, or want with the valkey-start image the workload runs now when
// that is all that tells them apart: an operator upgrade that changes only valkey-start's
// image (every release has its own) restarts no Valkey pod; each takes the new valkey-start
// with its next roll for another reason. The probes go with it: a kept valkey-start is
// probed as the applied template probes it (an earlier valkey-start may not answer the
// HTTP probes). A release whose controllers need the new valkey-start in every pod changes
// the pod template otherwise (a flag, a port), and rolls. Nothing is kept while a roll is
// in flight.
func (r *Reconciler) keepStartImage(ctx context.Context, node *valkeyv1.ValkeyNode, cur *current, want *desired) (*desired, error) {
	w := cur.workload()
	if w == nil || w.deleting || w.kind != want.kind || w.hash == want.hash || w.rollFrom != "" {
		return want, nil
	}
	seen, err := r.appliedStartImage(ctx, node, w)
	if err != nil || seen.image == "" || seen.image == r.Options.StartImage {
		return want, err
	}
	opts := r.Options
	opts.StartImage, opts.ExecProbes = seen.image, seen.execProbes
	kept, err := desiredFor(node, cur, opts)
	if err != nil || kept.hash != w.hash {
		return want, nil //nolint:nilerr // the desired template is refused or differs otherwise: want says which
	}
	return kept, nil
}

// appliedStartImage is the valkey-start image of the node's applied template w (image ""
// when it has none or the workload is gone) and how that template probes the server.
func (r *Reconciler) appliedStartImage(ctx context.Context, node *valkeyv1.ValkeyNode, w *workload) (startSeen, error) {
	key := types.NamespacedName{Namespace: node.Namespace, Name: node.Name}
	if s, ok := r.starts.get(key); ok && s.hash == w.hash {
		return s, nil
	}
	obj := workloadObject(node, w.kind)
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		if apierrors.IsNotFound(err) {
			return startSeen{}, nil
		}
		return startSeen{}, fmt.Errorf("get %s %s: %w", w.kind, obj.GetName(), err)
	}
	var tmpl corev1.PodTemplateSpec
	switch o := obj.(type) {
	case *appsv1.StatefulSet:
		tmpl = o.Spec.Template
	case *appsv1.Deployment:
		tmpl = o.Spec.Template
	}
	seen := startSeen{hash: tmpl.Annotations[AnnotationTemplateHash]}
	for _, c := range tmpl.Spec.InitContainers {
		if c.Name == installStartName {
			seen.image = c.Image
		}
	}
	for _, c := range tmpl.Spec.Containers {
		if c.Name == containerName && c.ReadinessProbe != nil {
			seen.execProbes = c.ReadinessProbe.Exec != nil
		}
	}
	r.starts.put(key, seen)
	return seen, nil
}
