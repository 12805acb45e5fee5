package topologycontroller

import (
	"sort"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// clusterState is what one reconcile knows: the API objects, what each server says, and
// the status it will apply.
type clusterState struct {
	cluster *valkeyv1.ValkeyCluster
	cs      *conns
	nodes   []*valkeyv1.ValkeyNode       // every ValkeyNode of the cluster, by name
	members map[string]*member           // by node name: nodes with a ready pod
	seed    *member                      // the member whose view is the reference
	view    map[string]*clusterNode      // the seed's view by node ID
	byID    map[string]*member           // reachable members by node ID
	primary map[int32]*member            // shard → its reachable primary
	out     map[string]*nodeStatus       // by node name: the status to apply
	roll    map[string]*metav1.Condition // RollApproved decided this round
	probed  map[string]*member           // by node name: servers of not-ready pods dialed for a roll

	progress  []string
	migrating bool
	requeue   time.Duration
	// stalled describes the slots whose keys could not move (see stallBook); stalledNow
	// are the slots that failed this round.
	stalled    string
	stalledNow map[int]bool
	stalledBy  map[[2]*member][]int // source and target → slots stalled this round
	// balanced: the slots phase found nothing to move this round.
	balanced bool
	// policyRefused says why the API server refused the cluster's NetworkPolicy ("" when
	// it did not).
	policyRefused string
	// serviceRefused says why a Service of the cluster could not be made ("" when both
	// are as wanted).
	serviceRefused string
	// notOwned names the objects of the cluster's names that belong to another (left as
	// they are).
	notOwned []string
	// tlsReady is the cluster's TLSReady decided this round (nil without spec.tls).
	tlsReady *metav1.Condition
	// usersApplied is the cluster's UsersApplied (nil without spec.users).
	usersApplied *metav1.Condition
	// savedPoints are the saved points the nodes carry for the backup under way, by node
	// name (see backups).
	savedPoints map[string]*valkeyv1.SavedPoint
	// restore is the cluster's restore (nil without spec.restoreFrom); restoredCond its
	// Restored decided this round.
	restore      *restorePlan
	restoredCond *metav1.Condition
	// headroom is the cluster's VolumeHeadroom (nil without spec.persistence).
	headroom *metav1.Condition
	// config is each node's ConfigApplied decided this round, by node name; configApplied
	// the cluster's (nil when no server answered). See liveconfig.go.
	config        map[string]*metav1.Condition
	configApplied *metav1.Condition
	// backupUnderway names the cluster's backup that holds slot moves (see backupUnderway).
	backupUnderway string
}

// nodeStatus is the topology status of one ValkeyNode.
type nodeStatus struct {
	joined metav1.Condition
	topo   *valkeyv1.TopologyStatus
}

func newClusterState(vc *valkeyv1.ValkeyCluster, nodes []*valkeyv1.ValkeyNode, cs *conns) *clusterState {
	return &clusterState{
		cluster: vc, cs: cs, nodes: nodes,
		members: map[string]*member{}, view: map[string]*clusterNode{}, byID: map[string]*member{},
		primary: map[int32]*member{}, out: map[string]*nodeStatus{},
		roll: map[string]*metav1.Condition{}, stalledNow: map[int]bool{},
		stalledBy: map[[2]*member][]int{},
	}
}

// wait records work in progress and asks to look again within d.
func (st *clusterState) wait(msg string, d time.Duration) {
	st.progress = append(st.progress, msg)
	if st.requeue == 0 || d < st.requeue {
		st.requeue = d
	}
}

// member is a ValkeyNode whose pod is ready, as its server sees itself. Of its view of the
// cluster only a summary is kept (see viewScan); the seed's view is also kept whole.
type member struct {
	node  *valkeyv1.ValkeyNode
	addr  string
	err   error
	self  *clusterNode
	view  []clusterNode     // the seed's (and a probed server's) whole view; nil otherwise
	repl  map[string]string // INFO server and replication
	state string            // cluster_state

	myID   string            // CLUSTER MYID, before the view is read
	lines  int               // lines of its view
	slots  int               // slots its view shows owned (handshake lines left out)
	unseen map[string]string // member ID → the address it is seen at ("" when not at all), for the members it does not see well
	others []clusterNode     // the lines of its view of nodes that are no reachable member
	seen   int               // the last viewScan round that saw this member well
}

func (m *member) reachable() bool { return m != nil && m.self != nil }
func (m *member) id() string {
	if m.self == nil {
		return ""
	}
	return m.self.ID
}
func (m *member) deleting() bool { return !m.node.DeletionTimestamp.IsZero() }

// note records that m does not see the member with the given ID well: it sees it at addr,
// or ("" ) not at all, or in the handshake, or failing.
func (m *member) note(id, addr string) {
	if m.unseen == nil {
		m.unseen = map[string]string{}
	}
	m.unseen[id] = addr
}

// sees tells whether m's view has the member b at its address, past the handshake and not
// failed.
func (m *member) sees(b *member) bool {
	_, unseen := m.unseen[b.id()]
	return m == b || !unseen
}

// other is the line of id among the lines of m's view of nodes that are no member.
func (m *member) other(id string) *clusterNode {
	for i := range m.others {
		if m.others[i].ID == id {
			return &m.others[i]
		}
	}
	return nil
}

// atomicMigration tells whether m's server migrates slots atomically (CLUSTER
// MIGRATESLOTS: Valkey 9.0 and later). Redis and older Valkey report no valkey_version
// of 9 or more (Valkey's redis_version is a fixed compatibility value).
func (m *member) atomicMigration() bool { return m.valkeyMajor() >= 9 }

// valkeyMajor is the major version of m's Valkey server; 0 for Redis.
func (m *member) valkeyMajor() int {
	major, _, _ := strings.Cut(m.repl["valkey_version"], ".")
	n, err := strconv.Atoi(major)
	if err != nil {
		return 0
	}
	return n
}

// linkUp tells whether a replica's replication link is up.
func (m *member) linkUp() bool { return m.repl["master_link_status"] == "up" }

// inCluster tells whether m is a member of the seed's cluster (the seed knows it at its
// address, past the handshake).
func (st *clusterState) inCluster(m *member) bool {
	if !m.reachable() || st.seed == nil {
		return false
	}
	if m == st.seed {
		return true
	}
	n := st.view[m.id()]
	return n != nil && n.Addr == m.addr
}

// reportedIDs are the node IDs some ValkeyNode stands for: the live ID of a reachable node,
// else the ID its status last recorded.
func (st *clusterState) reportedIDs() map[string]bool {
	ids := map[string]bool{}
	for _, n := range st.nodes {
		if m := st.members[n.Name]; m.reachable() {
			ids[m.id()] = true
		} else if id := recordedID(n); id != "" {
			ids[id] = true
		}
	}
	return ids
}

// recordedID is the node ID a ValkeyNode's status last recorded.
func recordedID(n *valkeyv1.ValkeyNode) string {
	if n.Status.Topology == nil {
		return ""
	}
	return n.Status.Topology.NodeID
}

// sortedMembers are the reachable members in node name order.
func (st *clusterState) sortedMembers() []*member {
	var out []*member
	for _, n := range st.nodes {
		if m := st.members[n.Name]; m.reachable() {
			out = append(out, m)
		}
	}
	return out
}

// joined tells whether n's ClusterJoined decided this round is True.
func (st *clusterState) joined(n *valkeyv1.ValkeyNode) bool {
	o := st.out[n.Name]
	return o != nil && o.joined.Status == metav1.ConditionTrue
}

// sortNodes sorts nodes by shard, then replica index, then name.
func sortNodes(nodes []*valkeyv1.ValkeyNode) {
	sort.Slice(nodes, func(i, j int) bool {
		a, b := nodes[i], nodes[j]
		if a.Spec.Shard != b.Spec.Shard {
			return a.Spec.Shard < b.Spec.Shard
		}
		if a.Spec.ReplicaIndex != b.Spec.ReplicaIndex {
			return a.Spec.ReplicaIndex < b.Spec.ReplicaIndex
		}
		return a.Name < b.Name
	})
}

func isNotFound(err error) bool      { return apierrors.IsNotFound(err) }
func isAlreadyExists(err error) bool { return apierrors.IsAlreadyExists(err) }
