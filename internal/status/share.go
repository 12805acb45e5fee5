package status

import (
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// NodeShare is one controller's part of a ValkeyNode's status: VolumeShare, WorkloadShare or
// TopologyShare. Each carries every condition its controller owns.
type NodeShare interface {
	nodeStatus() valkeyv1.ValkeyNodeStatus
	owned() []string
	sameField(cur valkeyv1.ValkeyNodeStatus) bool
}

// VolumeShare is the volume controller's part: VolumeReady, VolumeSized, SnapshotReady (while
// a backup's point is saved on the node) and status.volume.
type VolumeShare struct {
	Conditions []metav1.Condition
	Volume     *valkeyv1.VolumeStatus
}

// WorkloadShare is the workload controller's part: WorkloadReady, RollPending and
// status.workload.
type WorkloadShare struct {
	Conditions []metav1.Condition
	Workload   *valkeyv1.WorkloadStatus
}

// TopologyShare is the topology controller's part: ClusterJoined, RollApproved, Drained and
// status.topology.
type TopologyShare struct {
	Conditions []metav1.Condition
	Topology   *valkeyv1.TopologyStatus
}

func (s VolumeShare) nodeStatus() valkeyv1.ValkeyNodeStatus {
	return valkeyv1.ValkeyNodeStatus{Conditions: s.Conditions, Volume: s.Volume}
}
func (s WorkloadShare) nodeStatus() valkeyv1.ValkeyNodeStatus {
	return valkeyv1.ValkeyNodeStatus{Conditions: s.Conditions, Workload: s.Workload}
}
func (s TopologyShare) nodeStatus() valkeyv1.ValkeyNodeStatus {
	return valkeyv1.ValkeyNodeStatus{Conditions: s.Conditions, Topology: s.Topology}
}

// The volume controller owns SnapshotReady too, reported only while a backup's point is
// saved on the node: a share without it removes it.
func (VolumeShare) owned() []string {
	return append(append([]string(nil), valkeyv1.VolumeConditions...), valkeyv1.ConditionSnapshotReady)
}
func (WorkloadShare) owned() []string { return valkeyv1.WorkloadConditions }
func (TopologyShare) owned() []string { return valkeyv1.TopologyConditions }

func (s VolumeShare) sameField(cur valkeyv1.ValkeyNodeStatus) bool {
	return equality.Semantic.DeepEqual(cur.Volume, s.Volume)
}
func (s WorkloadShare) sameField(cur valkeyv1.ValkeyNodeStatus) bool {
	return equality.Semantic.DeepEqual(cur.Workload, s.Workload)
}
func (s TopologyShare) sameField(cur valkeyv1.ValkeyNodeStatus) bool {
	return equality.Semantic.DeepEqual(cur.Topology, s.Topology)
}

// UnchangedNode tells whether n, as last read, already shows share for its generation: the
// same conditions (status, reason, message, observedGeneration), no other condition of the
// share's owner, and the same sub-struct.
func UnchangedNode(n *valkeyv1.ValkeyNode, share NodeShare) bool {
	want, cur := share.nodeStatus(), n.Status
	return SameConditions(n, cur.Conditions, want.Conditions, share.owned()) && share.sameField(cur)
}

// UnchangedCluster tells whether vc, as last read, already shows st.
func UnchangedCluster(vc *valkeyv1.ValkeyCluster, st valkeyv1.ValkeyClusterStatus) bool {
	cur := vc.Status
	return cur.ObservedGeneration == st.ObservedGeneration && cur.Shards == st.Shards && cur.ReadyShards == st.ReadyShards &&
		cur.Nodes == st.Nodes && cur.ReadyNodes == st.ReadyNodes && cur.SlotsAssigned == st.SlotsAssigned &&
		cur.LargestVolume == st.LargestVolume && cur.GrownVolumes == st.GrownVolumes && cur.ServerVersions == st.ServerVersions &&
		SameConditions(vc, cur.Conditions, st.Conditions, append(append([]string(nil), valkeyv1.ClusterConditions...), valkeyv1.AccessConditions...))
}

// SameConditions tells whether cur holds exactly the conditions of want among the owned
// types, each with the same status, reason and message, written for obj's generation (or
// for the generation a wanted condition carries itself).
func SameConditions(obj client.Object, cur, want []metav1.Condition, owned []string) bool {
	have := 0
	for _, c := range cur {
		for _, t := range owned {
			if c.Type == t {
				have++
			}
		}
	}
	if have != len(want) {
		return false
	}
	for _, w := range want {
		c := Get(cur, w.Type)
		gen := w.ObservedGeneration
		if gen == 0 {
			gen = obj.GetGeneration()
		}
		if c == nil || c.Status != w.Status || c.Reason != w.Reason || c.Message != w.Message || c.ObservedGeneration != gen {
			return false
		}
	}
	return true
}

// applyConfig is a typed apply configuration of an object's status: apiVersion, kind, name
// and namespace, and the status share of one field manager.
type applyConfig struct {
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"`
	Metadata   applyMeta `json:"metadata"`
	Status     any       `json:"status"`
}

type applyMeta struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
}

func newApplyConfig(kind string, obj client.Object, st any) *applyConfig {
	return &applyConfig{APIVersion: valkeyv1.GroupVersion.String(), Kind: kind, Metadata: applyMeta{Name: obj.GetName(), Namespace: obj.GetNamespace()}, Status: st}
}

// IsApplyConfiguration marks applyConfig as a runtime.ApplyConfiguration.
func (*applyConfig) IsApplyConfiguration() {}

// GetName, GetNamespace, GetKind and GetAPIVersion let the client route the apply.
func (c *applyConfig) GetName() *string       { return ptr.To(c.Metadata.Name) }
func (c *applyConfig) GetNamespace() *string  { return ptr.To(c.Metadata.Namespace) }
func (c *applyConfig) GetKind() *string       { return ptr.To(c.Kind) }
func (c *applyConfig) GetAPIVersion() *string { return ptr.To(c.APIVersion) }

// clusterStatus is the apply form of a ValkeyCluster's status: every counter is sent, zero
// included, since the topology controller owns them all.
type clusterStatus struct {
	ObservedGeneration int64              `json:"observedGeneration"`
	Conditions         []metav1.Condition `json:"conditions"`
	Shards             int32              `json:"shards"`
	ReadyShards        int32              `json:"readyShards"`
	Nodes              int32              `json:"nodes"`
	ReadyNodes         int32              `json:"readyNodes"`
	SlotsAssigned      int32              `json:"slotsAssigned"`
	// LargestVolume is left out when empty (a cluster without persistence).
	LargestVolume string `json:"largestVolume,omitempty"`
	GrownVolumes  int32  `json:"grownVolumes"`
	// ServerVersions is left out when empty (no server answered).
	ServerVersions string `json:"serverVersions,omitempty"`
}

func clusterStatusOf(st valkeyv1.ValkeyClusterStatus) clusterStatus {
	return clusterStatus{
		ObservedGeneration: st.ObservedGeneration, Conditions: st.Conditions,
		Shards: st.Shards, ReadyShards: st.ReadyShards, Nodes: st.Nodes,
		ReadyNodes: st.ReadyNodes, SlotsAssigned: st.SlotsAssigned,
		LargestVolume: st.LargestVolume, GrownVolumes: st.GrownVolumes, ServerVersions: st.ServerVersions,
	}
}
