package topologycontroller

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
	"valkey.io/operator/internal/volumeusage"
	"valkey.io/operator/topologycontroller/round"
)

// The volume controller reports each node's VolumeHealthy (a full volume, a server that
// cannot persist) and its volume's figures; the cluster's status summarizes them: Degraded
// VolumeUnhealthy naming the nodes, LargestVolume and GrownVolumes.

// volumeAdvice ends Degraded's message while some volume is unhealthy.
const volumeAdvice = "for an unhealthy volume: raise spec.persistence.size, enable spec.persistence.autoGrow or raise its maxSize, " +
	"or free space; writes are refused with MISCONF while persistence fails"

// volumeFinding describes n's unhealthy volume for Degraded: the node, VolumeHealthy's
// reason, the usage measured and VolumeHealthy's message; "" while it is not False.
func volumeFinding(n *valkeyv1.ValkeyNode) string {
	c := round.UnhealthyVolume(n)
	if c == nil {
		return ""
	}
	return volumeFindingPrefix(n.Name, c.Reason) + usageOf(n) + ")"
}

// volumeFindingPrefix is the start of a node's finding, which stays while its usage moves:
// an event is sent when Degraded does not say it yet.
func volumeFindingPrefix(node, reason string) string {
	return fmt.Sprintf("%s's volume is unhealthy (%s", node, reason)
}

// usageOf is ", <percent>% used: <used> of <capacity>" from n's status.volume.usage (with
// the server's persistence report when it is not ok); "" when not measured.
func usageOf(n *valkeyv1.ValkeyNode) string {
	if n.Status.Volume == nil || n.Status.Volume.Usage == nil {
		return ""
	}
	u := n.Status.Volume.Usage
	out := fmt.Sprintf(", %d%% used: %s of %s", u.Percent, volumeusage.Bytes(u.UsedBytes), volumeusage.Bytes(u.CapacityBytes))
	if u.Persistence != "" && u.Persistence != "ok" {
		out += ", failing: " + u.Persistence
	}
	return out
}

// volumeFindings joins the findings of the wanted nodes with the advice; "" when none.
func volumeFindings(nodes []nodeFact) string {
	var out []string
	for _, n := range nodes {
		if n.wanted && n.volume != "" {
			out = append(out, n.volume)
		}
	}
	if len(out) == 0 {
		return ""
	}
	return strings.Join(append(out, volumeAdvice), "; ")
}

// noteVolumes sends a Warning event on the cluster for each wanted node whose volume is
// unhealthy and that Degraded does not name so yet (with that reason).
func (r *Reconciler) noteVolumes(st *clusterState) {
	cur := status.Get(st.Cluster.Status.Conditions, valkeyv1.ConditionDegraded)
	for _, n := range st.Nodes {
		c := round.UnhealthyVolume(n)
		if c == nil || !n.DeletionTimestamp.IsZero() || !round.Wanted(st.Cluster, n.Spec.Shard, n.Spec.ReplicaIndex) {
			continue
		}
		if cur != nil && cur.Status == metav1.ConditionTrue && strings.Contains(cur.Message, volumeFindingPrefix(n.Name, c.Reason)) {
			continue
		}
		r.Recorder.Eventf(st.Cluster, n, corev1.EventTypeWarning, valkeyv1.ReasonVolumeUnhealthy, "CheckVolumes", "%s; %s", volumeFinding(n), volumeAdvice)
	}
}

// volumeFigures are the largest capacity of the wanted nodes' claims ("" when none reports
// one) and the number of them persistence.autoGrow grew.
func volumeFigures(nodes []*valkeyv1.ValkeyNode, isWanted func(*valkeyv1.ValkeyNode) bool) (string, int32) {
	var largest *resource.Quantity
	var grown int32
	for _, n := range nodes {
		if !isWanted(n) || n.Status.Volume == nil {
			continue
		}
		if n.Status.Volume.AutoGrownTo != "" {
			grown++
		}
		q, err := resource.ParseQuantity(n.Status.Volume.Capacity)
		if err == nil && (largest == nil || q.Cmp(*largest) > 0) {
			largest = &q
		}
	}
	if largest == nil {
		return "", grown
	}
	return largest.String(), grown
}

// noteStorage sends the round's events about the nodes' volumes: the headroom of the
// cluster's persistence, and each unhealthy volume.
func (r *Reconciler) noteStorage(st *clusterState) {
	r.noteHeadroom(st)
	r.noteVolumes(st)
}
