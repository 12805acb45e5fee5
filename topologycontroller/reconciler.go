package topologycontroller

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/requeue"
	"valkey.io/operator/internal/status"
)

// Reconciler reconciles a ValkeyCluster: its ValkeyNodes, its Valkey cluster and the
// topology controller's status on both.
type Reconciler struct {
	Client    client.Client
	APIReader client.Reader
	Recorder  recorder.EventRecorder
	Opts      Options
	status    status.Applier
}

// short is the requeue delay while Valkey-side work is in progress (Valkey is not a
// Kubernetes watch source, so progress there is only seen by looking again).
const short = 500 * time.Millisecond

// Reconcile: get → delete or normal → ordered phases → one status apply per object.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var vc valkeyv1.ValkeyCluster
	if err := r.Client.Get(ctx, req.NamespacedName, &vc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !vc.DeletionTimestamp.IsZero() {
		// The node reconciler reports Drained=True ClusterDeleting on the nodes.
		return ctrl.Result{}, nil
	}
	res, err := r.reconcileNormal(ctx, &vc)
	if err != nil {
		return requeue.Settle(ctx, err)
	}
	return res, nil
}

func (r *Reconciler) reconcileNormal(ctx context.Context, vc *valkeyv1.ValkeyCluster) (ctrl.Result, error) {
	ref, err := r.ensureSecret(ctx, vc)
	var password string
	if err == nil {
		password, err = r.password(ctx, vc.Namespace, ref)
	}
	if pe := (*passwordError)(nil); errors.As(err, &pe) {
		if err := r.reportPassword(ctx, vc, pe); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{RequeueAfter: passwordRecheck}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	nodes, err := r.fanOut(ctx, vc, ref)
	if err != nil {
		return ctrl.Result{}, err
	}
	cs := newConns(password, r.Opts.DialTimeout, r.Opts.CommandTimeout)
	defer cs.close()
	st := r.observe(ctx, vc, nodes, cs)
	if pe := passwordRefused(st, ref); pe != nil {
		// Acting on the servers that still answer could misjudge the others as lost.
		if err := r.reportPassword(ctx, vc, pe); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{RequeueAfter: passwordRecheck}, nil
	}
	computeJoined(st)

	phaseErr := r.converge(ctx, st)
	if phaseErr != nil && ctx.Err() == nil {
		log.FromContext(ctx).Info("topology step failed; retrying", "error", phaseErr.Error())
		st.progress = append(st.progress, "retrying: "+phaseErr.Error())
		st.requeue = time.Second
	}
	statusErr := r.applyStatus(ctx, st)
	if statusErr != nil {
		return ctrl.Result{}, statusErr
	}
	if ctx.Err() != nil {
		return ctrl.Result{}, ctx.Err()
	}
	if st.requeue > 0 {
		return ctrl.Result{RequeueAfter: st.requeue}, nil
	}
	return ctrl.Result{RequeueAfter: r.Opts.ResyncPeriod}, nil
}

// converge runs the ordered phases. A phase that changed something in Valkey (or waits for
// Valkey) stops the round: the next reconcile observes the result and goes on.
func (r *Reconciler) converge(ctx context.Context, st *clusterState) error {
	phases := []struct {
		name string
		run  func(context.Context, *clusterState) (bool, error)
	}{
		{"meet", r.meet},
		{"resume migrations", r.resumeMigrations},
		{"replicate", r.replicate},
		{"forget", r.forget},
		{"drain", r.drain},
		{"slots", r.balanceSlots},
		{"scale in", r.scaleIn},
		{"rolls", r.rolls},
	}
	for _, p := range phases {
		acted, err := p.run(ctx, st)
		if err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
		if acted {
			if st.requeue == 0 {
				st.requeue = short
			}
			return nil
		}
	}
	return nil
}

// member is a ValkeyNode whose pod is ready, as its server sees itself.
type member struct {
	node  *valkeyv1.ValkeyNode
	addr  string
	err   error
	self  *clusterNode
	view  []clusterNode
	repl  map[string]string
	state string // cluster_state
}

// passwordRefused reports servers that refuse the password: the Secret's value was changed
// after they started with another one.
func passwordRefused(st *clusterState, ref *valkeyv1.SecretKeyRef) *passwordError {
	var names []string
	for _, n := range st.nodes {
		if m := st.members[n.Name]; m != nil && m.err != nil && isAuthError(m.err) {
			names = append(names, n.Name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	return &passwordError{valkeyv1.ReasonPasswordRejected, fmt.Sprintf(
		"%d of %d servers refuse the password in Secret %s (%s): it was changed after they started; "+
			"nothing is done in Valkey until they accept it: put back the value they started with",
		len(names), len(st.members), ref.Name, strings.Join(names, ", "))}
}

// isAuthError tells a refused password from an unreachable server.
func isAuthError(err error) bool {
	s := err.Error()
	return strings.Contains(s, "WRONGPASS") || strings.Contains(s, "NOAUTH") ||
		strings.Contains(s, "without any password configured") || strings.Contains(s, "invalid password")
}

func (m *member) reachable() bool { return m != nil && m.self != nil }
func (m *member) id() string {
	if m.self == nil {
		return ""
	}
	return m.self.ID
}
func (m *member) deleting() bool { return !m.node.DeletionTimestamp.IsZero() }

// knows tells whether m's view has id at addr, past the handshake and not failed.
func (m *member) knows(id, addr string) bool {
	for i := range m.view {
		n := &m.view[i]
		if n.ID == id {
			return n.Addr == addr && !n.handshake() && !n.failed() && !n.Flags["fail?"]
		}
	}
	return false
}

// linkUp tells whether a replica's replication link is up.
func (m *member) linkUp() bool { return m.repl["master_link_status"] == "up" }

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

	progress  []string
	migrating bool
	requeue   time.Duration
}

// nodeStatus is the topology status of one ValkeyNode.
type nodeStatus struct {
	joined metav1.Condition
	topo   *valkeyv1.TopologyStatus
}

func (st *clusterState) wait(msg string, d time.Duration) {
	st.progress = append(st.progress, msg)
	if st.requeue == 0 || d < st.requeue {
		st.requeue = d
	}
}

// observe dials every node whose pod is ready and reads its view of the cluster.
func (r *Reconciler) observe(ctx context.Context, vc *valkeyv1.ValkeyCluster, nodes []*valkeyv1.ValkeyNode, cs *conns) *clusterState {
	st := &clusterState{
		cluster: vc, cs: cs, nodes: nodes,
		members: map[string]*member{}, view: map[string]*clusterNode{}, byID: map[string]*member{},
		primary: map[int32]*member{}, out: map[string]*nodeStatus{},
		roll: map[string]*metav1.Condition{},
	}
	for _, n := range nodes {
		if !status.IsTrue(n.Status.Conditions, valkeyv1.ConditionWorkloadReady) || n.Status.Workload == nil || n.Status.Workload.PodIP == "" {
			continue
		}
		m := &member{node: n, addr: net.JoinHostPort(n.Status.Workload.PodIP, strconv.Itoa(r.Opts.ValkeyPort))}
		st.members[n.Name] = m
		out, err := cs.str(ctx, m.addr, "CLUSTER", "NODES")
		if err != nil {
			m.err = err
			continue
		}
		view, err := parseClusterNodes(out)
		if err != nil {
			m.err = err
			continue
		}
		m.view = view
		for i := range view {
			if view[i].myself() {
				m.self = &view[i]
			}
		}
		if m.self == nil {
			m.err = fmt.Errorf("no myself line in CLUSTER NODES of %s", m.addr)
			continue
		}
		info, err := cs.str(ctx, m.addr, "INFO", "replication")
		if err != nil {
			m.err, m.self = err, nil
			continue
		}
		m.repl = parseInfo(info)
		ci, err := cs.str(ctx, m.addr, "CLUSTER", "INFO")
		if err != nil {
			m.err, m.self = err, nil
			continue
		}
		m.state = parseInfo(ci)["cluster_state"]
		st.byID[m.id()] = m
	}
	st.seed = pickSeed(st)
	if st.seed != nil {
		for i := range st.seed.view {
			n := &st.seed.view[i]
			if !n.handshake() {
				st.view[n.ID] = n
			}
		}
	}
	st.findPrimaries()
	return st
}

// pickSeed chooses the member whose view is the reference: the one that knows the most
// nodes, then owns the most slots, then the first by name. Nodes being deleted are never
// the seed unless nothing else is reachable.
func pickSeed(st *clusterState) *member {
	var best *member
	score := func(m *member) (int, int, int) {
		del := 1
		if m.deleting() {
			del = 0
		}
		total := 0
		for i := range m.view {
			if !m.view[i].handshake() {
				total += m.view[i].slotCount()
			}
		}
		return del, len(m.view), total
	}
	for _, n := range st.nodes {
		m := st.members[n.Name]
		if !m.reachable() {
			continue
		}
		if best == nil {
			best = m
			continue
		}
		a1, a2, a3 := score(m)
		b1, b2, b3 := score(best)
		if a1 > b1 || (a1 == b1 && (a2 > b2 || (a2 == b2 && a3 > b3))) {
			best = m
		}
	}
	return best
}

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

// findPrimaries decides each shard's current primary among its reachable members: a
// primary that owns slots; else the primary its replicas follow; else the primary with the
// lowest replica index (a new, empty shard).
func (st *clusterState) findPrimaries() {
	shards := map[int32][]*member{}
	for _, n := range st.nodes {
		if m := st.members[n.Name]; st.inCluster(m) {
			shards[n.Spec.Shard] = append(shards[n.Spec.Shard], m)
		}
	}
	for shard, ms := range shards {
		var best *member
		for _, m := range ms {
			if m.self.primary() && m.self.slotCount() > 0 && (best == nil || m.self.slotCount() > best.self.slotCount()) {
				best = m
			}
		}
		if best == nil {
			for _, m := range ms {
				if !m.self.primary() && m.self.PrimaryID != "" {
					if p := st.byID[m.self.PrimaryID]; p != nil && p.node.Spec.Shard == shard && p.self.primary() {
						best = p
						break
					}
				}
			}
		}
		if best == nil {
			// An empty shard: its lowest replica index that is a primary, unless some member
			// still follows a primary that is gone (then Valkey decides, not us).
			following := false
			for _, m := range ms {
				if !m.self.primary() {
					following = true
				}
			}
			if !following {
				for _, m := range ms {
					if m.self.primary() && !m.deleting() && (best == nil || m.node.Spec.ReplicaIndex < best.node.Spec.ReplicaIndex) {
						best = m
					}
				}
			}
		}
		if best != nil {
			st.primary[shard] = best
		}
	}
}

// reportedIDs are the node IDs some ValkeyNode stands for: the live ID of a reachable node,
// else the ID its status last recorded.
func (st *clusterState) reportedIDs() map[string]bool {
	ids := map[string]bool{}
	for _, n := range st.nodes {
		if m := st.members[n.Name]; m.reachable() {
			ids[m.id()] = true
		} else if n.Status.Topology != nil && n.Status.Topology.NodeID != "" {
			ids[n.Status.Topology.NodeID] = true
		}
	}
	return ids
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

// event records an event on the ValkeyCluster (and the node, when given).
func (r *Reconciler) event(st *clusterState, node *valkeyv1.ValkeyNode, eventType, reason, action, msg string, args ...any) {
	var related runtime.Object
	if node != nil {
		related = node
	}
	r.Recorder.Eventf(st.cluster, related, eventType, reason, action, msg, args...)
	if node != nil {
		r.Recorder.Eventf(node, nil, eventType, reason, action, msg, args...)
	}
}

// nodeChanged passes the ValkeyNode changes the topology controller acts on: creation and
// deletion, a spec change, the start of deletion, the workload's conditions, and a new pod IP.
func nodeChanged() predicate.Predicate {
	conds := status.ConditionChanged(func(o client.Object) []metav1.Condition {
		if n, ok := o.(*valkeyv1.ValkeyNode); ok {
			return n.Status.Conditions
		}
		return nil
	}, valkeyv1.ConditionWorkloadReady, valkeyv1.ConditionRollPending)
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*valkeyv1.ValkeyNode)
			n, ok2 := e.ObjectNew.(*valkeyv1.ValkeyNode)
			if !ok1 || !ok2 {
				return false
			}
			if o.Generation != n.Generation || o.DeletionTimestamp.IsZero() != n.DeletionTimestamp.IsZero() {
				return true
			}
			if podIP(o) != podIP(n) {
				return true
			}
			return conds.Update(e)
		},
	}
}

func podIP(n *valkeyv1.ValkeyNode) string {
	if n.Status.Workload == nil {
		return ""
	}
	return n.Status.Workload.PodIP
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
