package topologycontroller

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
	"valkey.io/operator/topologycontroller/planner"
)

// healthy is a settled 2 × 1 cluster: every node ready, both shards serving.
func healthy() clusterFacts {
	return clusterFacts{
		shards: 2, replicas: 1, slots: planner.TotalSlots, stateOK: true,
		serving: map[int32]bool{0: true, 1: true},
		nodes: []nodeFact{
			{name: "c-0-0", shard: 0, replica: 0, wanted: true, ready: true},
			{name: "c-0-1", shard: 0, replica: 1, wanted: true, ready: true},
			{name: "c-1-0", shard: 1, replica: 0, wanted: true, ready: true},
			{name: "c-1-1", shard: 1, replica: 1, wanted: true, ready: true},
		},
	}
}

func TestSummarize(t *testing.T) {
	type want struct {
		ready, progressing, degraded, slots string // "True/Reason"
		readyNodes, readyShards, shards     int32
	}
	tests := []struct {
		name  string
		facts func(*clusterFacts)
		want  want
	}{{
		name:  "settled",
		facts: func(*clusterFacts) {},
		want:  want{"True/Ready", "False/Settled", "False/Healthy", "True/AllSlotsAssigned", 4, 2, 2},
	}, {
		name:  "a replica not ready: its shard is not ready",
		facts: func(f *clusterFacts) { f.nodes[3].ready = false },
		want:  want{"False/NotReady", "False/Settled", "False/Healthy", "True/AllSlotsAssigned", 3, 1, 2},
	}, {
		name: "forming: slots not all assigned",
		facts: func(f *clusterFacts) {
			f.slots, f.serving, f.progress = 8192, map[int32]bool{0: true}, []string{"assigning slots"}
		},
		want: want{"False/NotReady", "True/Forming", "False/Forming", "False/SlotsUnassigned", 4, 1, 1},
	}, {
		name:  "migrating",
		facts: func(f *clusterFacts) { f.migrating, f.progress = true, []string{"migrating slots"} },
		want:  want{"False/NotReady", "True/MigratingSlots", "False/Healthy", "True/AllSlotsAssigned", 4, 2, 2},
	}, {
		name: "a slot whose keys cannot move, waiting for its next try",
		facts: func(f *clusterFacts) {
			f.stalled = "keys of 1 slots could not move, tried again with backoff: slot 12: OOM (tried 2 times)"
		},
		want: want{"False/NotReady", "True/MigrationStalled", "False/Healthy", "True/AllSlotsAssigned", 4, 2, 2},
	}, {
		name: "a stalled slot while others move",
		facts: func(f *clusterFacts) {
			f.migrating, f.progress, f.stalled = true, []string{"migrating slots"}, "slot 12: OOM"
		},
		want: want{"False/NotReady", "True/MigrationStalled", "False/Healthy", "True/AllSlotsAssigned", 4, 2, 2},
	}, {
		name: "scaling out: more nodes wanted than exist",
		facts: func(f *clusterFacts) {
			f.shards = 3
		},
		want: want{"False/NotReady", "True/Scaling", "False/Healthy", "True/AllSlotsAssigned", 4, 2, 2},
	}, {
		name:  "rolling",
		facts: func(f *clusterFacts) { f.nodes[1].rolling = true },
		want:  want{"True/Ready", "True/Rolling", "False/Healthy", "True/AllSlotsAssigned", 4, 2, 2},
	}, {
		name: "a primary restarts without a replica",
		facts: func(f *clusterFacts) {
			f.nodes[0].rolling, f.nodes[0].rollsNoReplica = true, true
		},
		want: want{"True/Ready", "True/Rolling", "True/PrimaryRollingWithoutReplica", "True/AllSlotsAssigned", 4, 2, 2},
	}, {
		name: "an unreachable owner",
		facts: func(f *clusterFacts) {
			f.unreachable = []string{"node abcdef01 owns 8192 slots and is unreachable"}
			f.serving = map[int32]bool{1: true}
		},
		want: want{"False/NotReady", "False/Settled", "True/SlotsUnavailable", "True/AllSlotsAssigned", 4, 1, 1},
	}, {
		name:  "cluster_state fail",
		facts: func(f *clusterFacts) { f.stateOK = false },
		want:  want{"False/NotReady", "False/Settled", "True/ClusterStateFail", "True/AllSlotsAssigned", 4, 2, 2},
	}, {
		name: "a primary's Kubernetes node lost, its replica took over: ready on the survivors, degraded",
		facts: func(f *clusterFacts) {
			f.nodes[0].ready, f.nodes[0].lost = false, "pod valkey-c-0-0-0 is on Kubernetes node k2, which is NotReady"
		},
		want: want{"True/Ready", "False/Settled", "True/NodesLost", "True/AllSlotsAssigned", 3, 1, 2},
	}, {
		name: "a lost node before the failover: its shard serves nothing, not ready",
		facts: func(f *clusterFacts) {
			f.nodes[0].ready, f.nodes[0].lost = false, "pod valkey-c-0-0-0 is on Kubernetes node k2, which is NotReady"
			f.serving, f.stateOK = map[int32]bool{1: true}, false
			f.unreachable = []string{"node abcdef01 owns 8192 slots and is unreachable"}
		},
		want: want{"False/NotReady", "False/Settled", "True/ClusterStateFail", "True/AllSlotsAssigned", 3, 1, 1},
	}, {
		name: "a node not ready for another reason is not excused",
		facts: func(f *clusterFacts) {
			f.nodes[0].ready = false
		},
		want: want{"False/NotReady", "False/Settled", "False/Healthy", "True/AllSlotsAssigned", 3, 1, 2},
	}, {
		name: "a node being deleted counts as ready but not for its shard",
		facts: func(f *clusterFacts) {
			f.nodes = append(f.nodes, nodeFact{name: "c-0-2", shard: 0, replica: 2, ready: true})
		},
		want: want{"False/NotReady", "True/Scaling", "False/Healthy", "True/AllSlotsAssigned", 5, 2, 2},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := healthy()
			tt.facts(&f)
			got := summarize(f)
			for typ, w := range map[string]string{
				valkeyv1.ConditionReady: tt.want.ready, valkeyv1.ConditionProgressing: tt.want.progressing,
				valkeyv1.ConditionDegraded: tt.want.degraded, valkeyv1.ConditionSlotsAssigned: tt.want.slots,
			} {
				if c := status.Get(got.Conditions, typ); c == nil || string(c.Status)+"/"+c.Reason != w {
					t.Errorf("%s = %v, want %s", typ, c, w)
				}
			}
			if got.ReadyNodes != tt.want.readyNodes || got.ReadyShards != tt.want.readyShards || got.Shards != tt.want.shards {
				t.Errorf("readyNodes %d, readyShards %d, shards %d; want %d, %d, %d",
					got.ReadyNodes, got.ReadyShards, got.Shards, tt.want.readyNodes, tt.want.readyShards, tt.want.shards)
			}
			if got.Nodes != int32(len(f.nodes)) || got.SlotsAssigned != int32(f.slots) {
				t.Errorf("nodes %d, slots %d; want %d, %d", got.Nodes, got.SlotsAssigned, len(f.nodes), f.slots)
			}
		})
	}
}

// Every condition summarize writes is one of the cluster's own, once each.
func TestSummarizeWritesEveryClusterCondition(t *testing.T) {
	got := summarize(healthy())
	if len(got.Conditions) != len(valkeyv1.ClusterConditions) {
		t.Fatalf("%d conditions, want %d", len(got.Conditions), len(valkeyv1.ClusterConditions))
	}
	for _, typ := range valkeyv1.ClusterConditions {
		if c := status.Get(got.Conditions, typ); c == nil || c.Status == metav1.ConditionUnknown {
			t.Errorf("condition %s missing", typ)
		}
	}
}

// Degraded names the nodes on lost Kubernetes nodes, with what their WorkloadReady says.
func TestDegradedNamesLostNodes(t *testing.T) {
	f := healthy()
	f.nodes[1].ready, f.nodes[1].lost = false, "pod valkey-c-0-1-0 is on Kubernetes node k3, which is Unknown"
	got := status.Get(summarize(f).Conditions, valkeyv1.ConditionDegraded)
	want := "c-0-1 is on a lost Kubernetes node: pod valkey-c-0-1-0 is on Kubernetes node k3, which is Unknown"
	if got == nil || got.Message != want {
		t.Errorf("Degraded = %v, want message %q", got, want)
	}
	ready := status.Get(summarize(f).Conditions, valkeyv1.ConditionReady)
	if ready == nil || !strings.Contains(ready.Message, "ready on the survivors (lost Kubernetes nodes hold 1 of its nodes)") {
		t.Errorf("Ready = %v, want a message saying it is ready on the survivors", ready)
	}
}

// Degraded never says every slot is served while slots are unassigned: Forming (False)
// until the slots are first all assigned, SlotsUnassigned (True) when some are lost later.
func TestDegradedAgreesWithSlotsAssigned(t *testing.T) {
	tests := []struct {
		name           string
		slots          int
		formed         bool
		degraded, slot string // "Status/Reason"
		msg            string
	}{
		{"no slot assigned yet", 0, false, "False/Forming", "False/SlotsUnassigned", "forming: 0 of 16384 slots are assigned"},
		{"slots being assigned", 10923, false, "False/Forming", "False/SlotsUnassigned", "forming: 10923 of 16384 slots are assigned"},
		{"slots lost after forming", 16000, true, "True/SlotsUnassigned", "False/SlotsUnassigned", "384 of 16384 slots are not assigned"},
		{"every slot assigned", planner.TotalSlots, false, "False/Healthy", "True/AllSlotsAssigned", "every slot is served"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := healthy()
			f.slots, f.formed = tt.slots, tt.formed
			if tt.slots < planner.TotalSlots {
				f.serving, f.progress = map[int32]bool{}, []string{"assigning slots"}
			}
			got := summarize(f)
			d, sa := status.Get(got.Conditions, valkeyv1.ConditionDegraded), status.Get(got.Conditions, valkeyv1.ConditionSlotsAssigned)
			if string(d.Status)+"/"+d.Reason != tt.degraded || string(sa.Status)+"/"+sa.Reason != tt.slot {
				t.Errorf("Degraded = %s/%s, SlotsAssigned = %s/%s; want %s, %s", d.Status, d.Reason, sa.Status, sa.Reason, tt.degraded, tt.slot)
			}
			if !strings.Contains(d.Message, tt.msg) {
				t.Errorf("Degraded message %q, want it to say %q", d.Message, tt.msg)
			}
			if tt.slots < planner.TotalSlots && strings.Contains(d.Message, "every slot is served") {
				t.Errorf("Degraded says %q with %d slots assigned", d.Message, tt.slots)
			}
		})
	}
}

// An unhealthy volume degrades the cluster (naming the node, its usage and what to do)
// without changing Ready, and every other finding's reason takes precedence.
func TestDegradedByUnhealthyVolume(t *testing.T) {
	f := healthy()
	f.nodes[2].volume = "c-1-0's volume is unhealthy (VolumeFull, 96% used: 0.9GiB of 1.0GiB): 96% of the volume is used"
	got := summarize(f)
	d, ready := status.Get(got.Conditions, valkeyv1.ConditionDegraded), status.Get(got.Conditions, valkeyv1.ConditionReady)
	if string(d.Status)+"/"+d.Reason != "True/VolumeUnhealthy" || ready.Status != metav1.ConditionTrue {
		t.Fatalf("Degraded = %s/%s, Ready = %s; want True/VolumeUnhealthy, True", d.Status, d.Reason, ready.Status)
	}
	for _, want := range []string{f.nodes[2].volume, "raise spec.persistence.size, enable spec.persistence.autoGrow or raise its maxSize, or free space", "MISCONF"} {
		if !strings.Contains(d.Message, want) {
			t.Errorf("Degraded message %q does not say %q", d.Message, want)
		}
	}
	f.nodes[1].ready, f.nodes[1].lost = false, "its Kubernetes node is not ready"
	if d := status.Get(summarize(f).Conditions, valkeyv1.ConditionDegraded); d.Reason != valkeyv1.ReasonNodesLost || !strings.Contains(d.Message, "VolumeFull") {
		t.Errorf("with a lost node too, Degraded = %s %q; want NodesLost, still naming the volume", d.Reason, d.Message)
	}
	f = healthy()
	f.nodes[3].wanted, f.nodes[3].volume = false, "c-1-1's volume is unhealthy (VolumeFull): full"
	if d := status.Get(summarize(f).Conditions, valkeyv1.ConditionDegraded); d.Status != metav1.ConditionFalse {
		t.Errorf("a node not wanted degrades the cluster: %v", d)
	}
}

// LargestVolume and GrownVolumes come from the wanted nodes' volume status.
func TestVolumeFigures(t *testing.T) {
	node := func(capacity, grown string) *valkeyv1.ValkeyNode {
		return &valkeyv1.ValkeyNode{Status: valkeyv1.ValkeyNodeStatus{Volume: &valkeyv1.VolumeStatus{Capacity: capacity, AutoGrownTo: grown}}}
	}
	nodes := []*valkeyv1.ValkeyNode{node("1Gi", ""), node("1536Mi", "1536Mi"), node("", ""), {}, node("10Gi", "10Gi")}
	largest, grown := volumeFigures(nodes, func(n *valkeyv1.ValkeyNode) bool { return n != nodes[4] })
	if largest != "1536Mi" || grown != 1 {
		t.Errorf("volumeFigures = %q, %d; want 1536Mi, 1", largest, grown)
	}
	if largest, grown := volumeFigures(nil, nil); largest != "" || grown != 0 {
		t.Errorf("no nodes: %q, %d", largest, grown)
	}
}

// A finding shows the node, VolumeHealthy's reason and message, and the usage measured.
func TestVolumeFinding(t *testing.T) {
	n := &valkeyv1.ValkeyNode{}
	n.Name = "c-0-0"
	if got := volumeFinding(n); got != "" {
		t.Errorf("no condition: %q", got)
	}
	n.Status.Conditions = []metav1.Condition{status.Condition(valkeyv1.ConditionVolumeHealthy, false, valkeyv1.ReasonPersistenceFailing, "the last BGSAVE failed")}
	n.Status.Volume = &valkeyv1.VolumeStatus{Usage: &valkeyv1.VolumeUsage{UsedBytes: 1 << 30, CapacityBytes: 2 << 30, Percent: 50, Persistence: "rdb"}}
	want := "c-0-0's volume is unhealthy (PersistenceFailing, 50% used: 1.0GiB of 2.0GiB, failing: rdb)"
	if got := volumeFinding(n); got != want {
		t.Errorf("volumeFinding = %q, want %q", got, want)
	}
}
