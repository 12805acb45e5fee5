package topologycontroller

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// A paused cluster (see docs/contract.md, "Pause"): while the ValkeyCluster or one of its
// ValkeyNodes carries valkey.io/paused, the topology controller changes nothing of the
// cluster (no node created, updated or deleted, no command that changes a server, no
// Secret, Service, budget or policy written, no backup step) and only reports Paused on the
// cluster and on each node; the volume and workload controllers read the node's Paused and
// leave its claim and workload alone. The other conditions stay as they were last written.

// pause reports a paused cluster and tells whether it is paused. A cluster no longer
// paused gets a Resumed event; its next round writes its status without Paused.
func (r *Reconciler) pause(ctx context.Context, vc *valkeyv1.ValkeyCluster) (bool, error) {
	nodes, err := r.nodesOf(ctx, vc)
	if err != nil {
		return false, err
	}
	reason, msg := pausedBy(vc, nodes)
	was := status.Get(vc.Status.Conditions, valkeyv1.ConditionPaused) != nil
	if reason == "" {
		if was {
			r.Recorder.Eventf(vc, nil, corev1.EventTypeNormal, valkeyv1.EventResumed, "Resume", "the pause was lifted: the controllers act on the cluster again")
		}
		return false, nil
	}
	if !was {
		r.Recorder.Eventf(vc, nil, corev1.EventTypeNormal, valkeyv1.EventPaused, "Pause", "%s", msg)
	}
	c := status.Condition(valkeyv1.ConditionPaused, true, reason, msg)
	for _, n := range nodes {
		if err := r.Status.ApplyNode(ctx, n, pausedShare(n, c)); err != nil && !isNotFound(err) {
			return true, err
		}
	}
	return true, r.Status.ApplyCluster(ctx, vc, pausedClusterStatus(vc, c))
}

// nodesOf lists the cluster's own ValkeyNodes (from the cache).
func (r *Reconciler) nodesOf(ctx context.Context, vc *valkeyv1.ValkeyCluster) ([]*valkeyv1.ValkeyNode, error) {
	var list valkeyv1.ValkeyNodeList
	if err := r.List(ctx, &list, client.InNamespace(vc.Namespace), client.MatchingLabels{valkeyv1.LabelCluster: vc.Name}); err != nil {
		return nil, fmt.Errorf("list the nodes of %s: %w", vc.Name, err)
	}
	out := make([]*valkeyv1.ValkeyNode, 0, len(list.Items))
	for i := range list.Items {
		if metav1.IsControlledBy(&list.Items[i], vc) {
			out = append(out, &list.Items[i])
		}
	}
	return out, nil
}

// pausedBy says why the cluster is paused ("" when it is not): its own annotation, or the
// nodes that carry one.
func pausedBy(vc *valkeyv1.ValkeyCluster, nodes []*valkeyv1.ValkeyNode) (reason, msg string) {
	const what = "the controllers change nothing of the cluster (nodes, claims, workloads, servers) and a node being deleted waits; remove the annotation to resume"
	if valkeyv1.Paused(vc.Annotations) {
		return valkeyv1.ReasonClusterPaused, fmt.Sprintf("paused by the annotation %s%s: %s", valkeyv1.AnnotationPaused, said(vc.Annotations), what)
	}
	var paused []string
	for _, n := range nodes {
		if valkeyv1.Paused(n.Annotations) {
			paused = append(paused, n.Name+said(n.Annotations))
		}
	}
	if len(paused) == 0 {
		return "", ""
	}
	sort.Strings(paused)
	return valkeyv1.ReasonNodePaused, fmt.Sprintf("paused by the annotation %s on %s: %s", valkeyv1.AnnotationPaused, strings.Join(paused, ", "), what)
}

// said is the annotation's value as a reason (" (value)"), "" for "true" or nothing.
func said(annotations map[string]string) string {
	if v := annotations[valkeyv1.AnnotationPaused]; v != "" && v != "true" {
		return fmt.Sprintf(" (%q)", v)
	}
	return ""
}

// pausedShare is a node's topology status as it is, with Paused.
func pausedShare(n *valkeyv1.ValkeyNode, c metav1.Condition) status.TopologyShare {
	return status.TopologyShare{Conditions: keptConditions(n.Status.Conditions, valkeyv1.TopologyConditions, c), Topology: n.Status.Topology}
}

// pausedClusterStatus is the cluster's status as it is, with Paused.
func pausedClusterStatus(vc *valkeyv1.ValkeyCluster, c metav1.Condition) valkeyv1.ValkeyClusterStatus {
	st := *vc.Status.DeepCopy()
	owned := append(append([]string{valkeyv1.ConditionRestored}, valkeyv1.ClusterConditions...), valkeyv1.AccessConditions...)
	st.Conditions = keptConditions(vc.Status.Conditions, owned, c)
	return st
}

// keptConditions are the conditions of the given types as they are (each keeps the
// generation it was written for), with c in place of its type.
func keptConditions(cur []metav1.Condition, types []string, c metav1.Condition) []metav1.Condition {
	out := []metav1.Condition{c}
	for _, t := range types {
		if cc := status.Get(cur, t); cc != nil && t != c.Type {
			out = append(out, *cc)
		}
	}
	return out
}
