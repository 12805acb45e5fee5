package topologycontroller

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
	"valkey.io/operator/internal/valkeyconf"
)

// The version gate (see docs/contract.md, "Valkey upgrades and downgrades"): a change of
// spec.image or spec.config is not handed to the nodes, so no pod rolls, when
//   - the version spec.image's tag names (a major alone will do) is of an older major than
//     a server of the cluster runs (a downgrade: Valkey 9 writes RDB format 80, which
//     Valkey 8 cannot load), unless the cluster carries valkey.io/allow-downgrade: "true";
//   - spec.image changes to an image whose version cannot be read (no tag, a digest alone,
//     latest) while servers report theirs: it may be a downgrade, and is held as one,
//     under the same acknowledgement;
//   - spec.config names a directive a later release line brought and the target's does not
//     know (its server would refuse the config file and never start).
// Only the nodes' image and config are held: the rest of the spec still flows.

// versionHold says why vc's image and config are held from its nodes (reason "" when they
// are not).
func versionHold(vc *valkeyv1.ValkeyCluster, nodes []*valkeyv1.ValkeyNode) (reason, msg string) {
	if !changing(vc, nodes) {
		return "", ""
	}
	acknowledged := vc.Annotations[valkeyv1.AnnotationAllowDowngrade] == "true"
	newest, by := newestServer(nodes)
	target, ok := valkeyconf.ImageVersion(vc.Spec.Image)
	if !ok {
		if by == "" || acknowledged || !imageChanging(vc, nodes) {
			return "", ""
		}
		return valkeyv1.ReasonVersionUnknown, fmt.Sprintf(
			"spec.image %s names no version (no tag, a digest alone, or a tag such as latest): it may be an older major than the %s %s runs, "+
				"whose servers cannot load the data a server of %d wrote, so a rolled node would not start on its volume; nothing rolled. "+
				"Name the version in the tag (a digest may follow it: image:%s@sha256:...), or, knowing it is not an older major (or that every node's data is then lost), "+
				"annotate the cluster %s=true",
			vc.Spec.Image, newest, by, newest.Major, newest, valkeyv1.AnnotationAllowDowngrade)
	}
	if by != "" && newest.Major > target.Major && !acknowledged {
		return valkeyv1.ReasonDowngradeRefused, fmt.Sprintf(
			"spec.image %s is Valkey %s, an older major than the %s %s runs: a server of %d cannot load the data a server of %d wrote (its RDB format is newer), "+
				"so a rolled node would not start on its volume; nothing rolled. Set spec.image back, or, knowing that every node's data is then lost, annotate the cluster %s=true",
			vc.Spec.Image, target, newest, by, target.Major, newest.Major, valkeyv1.AnnotationAllowDowngrade)
	}
	if keys := valkeyconf.NewerDirectives(target, vc.Spec.Config); len(keys) > 0 {
		return valkeyv1.ReasonUnknownDirective, fmt.Sprintf(
			"spec.config names %s, which Valkey %s (spec.image %s) does not know: its servers would refuse their config file and not start; nothing rolled. "+
				"Remove the keys or name a later version", strings.Join(keys, ", "), target, vc.Spec.Image)
	}
	return "", ""
}

// specHeld tells whether vc's image and config are held from its nodes: the version gate
// refuses them (versionHold), or spec.config is one the workload controller would refuse
// (refusedConfig), which an older CRD let through. Its nodes keep what they run, and the
// topology controller keeps managing them.
func specHeld(vc *valkeyv1.ValkeyCluster, nodes []*valkeyv1.ValkeyNode) bool {
	if reason, _ := versionHold(vc, nodes); reason != "" {
		return true
	}
	return refusedConfig(vc.Spec.Config) != nil && changing(vc, nodes)
}

// refusedConfig is why the workload controller would refuse config (valkeyconf.CheckConfig),
// nil when it would not.
func refusedConfig(config map[string]string) error { return valkeyconf.CheckConfig(config) }

// imageChanging tells whether some node of vc not being deleted has another image than
// vc's spec.
func imageChanging(vc *valkeyv1.ValkeyCluster, nodes []*valkeyv1.ValkeyNode) bool {
	for _, n := range nodes {
		if n.DeletionTimestamp.IsZero() && n.Spec.Image != vc.Spec.Image {
			return true
		}
	}
	return false
}

// changing tells whether some node of vc has another image or config than vc's spec.
func changing(vc *valkeyv1.ValkeyCluster, nodes []*valkeyv1.ValkeyNode) bool {
	for _, n := range nodes {
		if n.Spec.Image != vc.Spec.Image || !equality.Semantic.DeepEqual(n.Spec.Config, vc.Spec.Config) {
			return true
		}
	}
	return len(nodes) == 0
}

// newestServer is the newest Valkey version the nodes report and a node that runs it.
func newestServer(nodes []*valkeyv1.ValkeyNode) (valkeyconf.Version, string) {
	var newest valkeyconf.Version
	by := ""
	for _, n := range nodes {
		if n.Status.Topology == nil {
			continue
		}
		v, ok := valkeyconf.ParseVersion(n.Status.Topology.ServerVersion)
		if ok && (by == "" || v.Major > newest.Major || v.Major == newest.Major && v.Minor > newest.Minor) {
			newest, by = v, n.Name
		}
	}
	return newest, by
}

// heldSpec is the image and config the nodes keep while versionHold holds vc's: those of
// its first node; ok is false for a cluster without nodes (none is created meanwhile).
func heldSpec(nodes []*valkeyv1.ValkeyNode) (image string, config map[string]string, ok bool) {
	for _, n := range nodes {
		if n.DeletionTimestamp.IsZero() {
			return n.Spec.Image, n.Spec.Config, true
		}
	}
	return "", nil, false
}

// reportVersionHold is the cluster's VersionRefused (nil when nothing is held), with a
// Warning event when the refusal is new.
func (r *Reconciler) reportVersionHold(st *clusterState) *metav1.Condition {
	reason, msg := versionHold(st.Cluster, st.Nodes)
	if reason == "" {
		return nil
	}
	if cur := status.Get(st.Cluster.Status.Conditions, valkeyv1.ConditionVersionRefused); cur == nil || cur.Message != msg {
		r.Recorder.Eventf(st.Cluster, nil, corev1.EventTypeWarning, reason, "CheckVersion", "%s", truncate(msg, 1000)) // EventDowngradeRefused, EventVersionUnknown, EventUnknownDirective
	}
	c := status.Condition(valkeyv1.ConditionVersionRefused, true, reason, msg)
	return &c
}
