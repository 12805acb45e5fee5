package topologycontroller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/valkey-io/valkey-go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
	"valkey.io/operator/internal/valkeyconf"
	"valkey.io/operator/topologycontroller/round"
)

// Live config (see docs/contract.md, "Live config"): the keys of spec.config a server
// takes at runtime (valkeyconf.LiveKeys) are set on every reachable server with one
// CONFIG SET, which the server applies all or none of; the workload controller leaves them
// out of the pod template's hash, so changing them restarts nothing. A server is set again
// only when it restarted (a new run_id) or the values changed; a key removed from
// spec.config is set back to its default. Keys spec.config never named are left as the
// server has them, but for the operator's own rendered defaults (cluster-node-timeout,
// valkeyconf.WantedLive), which every server is given.

// liveRecord is what one server was given: its run_id, the live keys of spec.config and
// their values' fingerprint, and the server's refusal ("" when it took them).
type liveRecord struct {
	runID   string
	keys    []string
	fp      uint64
	refused string
	// forming: the server was given formingNodeTimeout (see formingtimeout.go).
	forming bool
}

// liveBook holds the records of every cluster's servers.
type liveBook struct {
	mu       sync.Mutex
	clusters map[types.UID]map[string]liveRecord // cluster → node name → record
}

func (b *liveBook) of(cluster types.UID) map[string]liveRecord {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.clusters[cluster]
}

// keep replaces a cluster's records (the nodes it no longer has go).
func (b *liveBook) keep(cluster types.UID, recs map[string]liveRecord) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.clusters == nil {
		b.clusters = map[types.UID]map[string]liveRecord{}
	}
	b.clusters[cluster] = recs
}

func (b *liveBook) forget(cluster types.UID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.clusters, cluster)
}

// liveOutcome is what the round did with the live keys, for the cluster's condition and
// events.
type liveOutcome struct {
	set      []string            // nodes whose changed values were set this round
	refused  map[string][]string // the server's error → the nodes that gave it
	answered int                 // servers that run the values
	waiting  []string            // nodes whose server did not answer
}

// applyLiveConfig sets the live keys of spec.config on every reachable server that does
// not run them yet, and decides each node's ConfigApplied and the cluster's.
func (r *Reconciler) applyLiveConfig(ctx context.Context, st *clusterState) {
	prev := r.live.of(st.Cluster.UID)
	next := make(map[string]liveRecord, len(st.Nodes))
	st.config = make(map[string]*metav1.Condition, len(st.Nodes))
	var out liveOutcome
	for _, n := range st.Nodes {
		rec, had := prev[n.Name]
		m := st.Members[n.Name]
		if err := refusedConfig(n.Spec.Config); err != nil {
			// A config the workload refuses (one an older operator handed to the node) is not
			// applied live either: the server runs what it had.
			if had {
				next[n.Name] = rec
			}
			st.config[n.Name] = invalidNodeConfig(err)
			continue
		}
		if !m.Reachable() {
			if had {
				next[n.Name] = rec
			}
			out.waiting = append(out.waiting, n.Name)
			st.config[n.Name] = unreachableConfig(n)
			continue
		}
		named := valkeyconf.WantedLive(n.Spec.Config)
		forming := formingTimeout(st, m, n.Spec.Config, had && rec.forming)
		if forming {
			named[nodeTimeoutKey] = formingNodeTimeout
			st.forming = true
		}
		fresh := liveRecord{runID: m.Repl["run_id"], keys: slices.Sorted(maps.Keys(named)), fp: valkeyconf.Fingerprint(named), forming: forming}
		if !had || rec.runID != fresh.runID || rec.fp != fresh.fp {
			refused, err := setLive(ctx, st.Conns, m.Addr, withRemoved(named, rec.keys))
			if err != nil { // not an answer of the server: tried again next round
				out.waiting = append(out.waiting, n.Name)
				st.config[n.Name] = unreachableConfig(n)
				continue
			}
			fresh.refused = refused
			if refused != "" {
				fresh.keys = rec.keys // the server still runs what it had
			}
			if had && rec.fp != fresh.fp && refused == "" && rec.forming == fresh.forming { // not the formation's own timeout
				out.set = append(out.set, n.Name)
			}
			rec = fresh
		}
		next[n.Name] = rec
		st.config[n.Name] = nodeConfigCondition(n, rec)
		if rec.refused != "" {
			if out.refused == nil {
				out.refused = map[string][]string{}
			}
			out.refused[rec.refused] = append(out.refused[rec.refused], n.Name)
		} else {
			out.answered++
		}
	}
	r.live.keep(st.Cluster.UID, next)
	r.reportLiveConfig(st, out)
}

// withRemoved is named with every key of before it no longer names, at its default.
func withRemoved(named map[string]string, before []string) map[string]string {
	out := make(map[string]string, len(named)+len(before))
	for _, k := range before {
		if _, ok := named[k]; !ok {
			out[k], _ = valkeyconf.LiveDefault(k)
		}
	}
	for k, v := range named {
		out[k] = v
	}
	return out
}

// setLive sends one CONFIG SET of values (nothing when there are none). refused is the
// server's error; err is any other failure (no answer).
func setLive(ctx context.Context, cs *round.Conns, addr string, values map[string]string) (refused string, err error) {
	args := valkeyconf.SetArgs(values)
	if args == nil {
		return "", nil
	}
	res, err := cs.Do(ctx, addr, args...)
	if err != nil {
		return "", err
	}
	err = res.Error()
	var ve *valkey.ValkeyError
	if errors.As(err, &ve) {
		return ve.Error(), nil
	}
	return "", err
}

// nodeConfigCondition is a node's ConfigApplied from what its server was given.
func nodeConfigCondition(n *valkeyv1.ValkeyNode, rec liveRecord) *metav1.Condition {
	named := valkeyconf.Named(n.Spec.Config)
	if rec.refused != "" {
		c := status.Condition(valkeyv1.ConditionConfigApplied, false, valkeyv1.ReasonConfigRefused, fmt.Sprintf(
			"the server refused CONFIG SET of spec.config's live keys (%s): %s; it runs as it was (the server takes all of them or none), "+
				"and its ConfigMap keeps the values it runs: correct spec.config", orNone(named), rec.refused))
		return &c
	}
	c := status.Condition(valkeyv1.ConditionConfigApplied, true, valkeyv1.ReasonAppliedLive, fmt.Sprintf(
		"the server runs spec.config's live keys (%s), set without a restart", orNone(named)))
	return &c
}

// invalidNodeConfig is the ConfigApplied of a node whose spec.config is refused.
func invalidNodeConfig(err error) *metav1.Condition {
	c := status.Condition(valkeyv1.ConditionConfigApplied, false, valkeyv1.ReasonInvalidConfig, fmt.Sprintf(
		"spec.config is refused (%v): none of its keys is set on the server, which runs as it was, and its pod does not roll; correct spec.config", err))
	return &c
}

// unreachableConfig keeps a node's ConfigApplied while its server does not answer: as it
// was when it still holds for the node's generation, Unknown otherwise.
func unreachableConfig(n *valkeyv1.ValkeyNode) *metav1.Condition {
	if cur := status.Get(n.Status.Conditions, valkeyv1.ConditionConfigApplied); cur != nil && cur.ObservedGeneration == n.Generation {
		c := *cur
		return &c
	}
	c := status.Condition(valkeyv1.ConditionConfigApplied, false, valkeyv1.ReasonServerUnreachable,
		"the server does not answer: spec.config's live keys are set once it does")
	c.Status = metav1.ConditionUnknown
	return &c
}

// reportLiveConfig decides the cluster's ConfigApplied and sends its events: one Normal
// event for the servers given changed values this round, one Warning for new refusals.
func (r *Reconciler) reportLiveConfig(st *clusterState, out liveOutcome) {
	named := orNone(valkeyconf.Named(st.Cluster.Spec.Config))
	if len(out.set) > 0 {
		sort.Strings(out.set)
		r.Recorder.Eventf(st.Cluster, nil, corev1.EventTypeNormal, valkeyv1.EventConfigApplied, "SetConfig",
			"set spec.config's live keys (%s) on %s without a restart", named, strings.Join(out.set, ", "))
	}
	var c metav1.Condition
	switch {
	case refusedConfig(st.Cluster.Spec.Config) != nil:
		c = r.invalidClusterConfig(st)
	case len(out.refused) > 0:
		msg := fmt.Sprintf("servers refused spec.config's live keys (%s), and run as they were: %s; correct spec.config",
			named, refusedBy(out.refused))
		if cur := status.Get(st.Cluster.Status.Conditions, valkeyv1.ConditionConfigApplied); cur == nil || cur.Message != msg {
			// An event's note holds at most 1 kB.
			r.Recorder.Eventf(st.Cluster, nil, corev1.EventTypeWarning, valkeyv1.EventConfigRefused, "SetConfig", "%s", truncate(msg, 1000))
		}
		c = status.Condition(valkeyv1.ConditionConfigApplied, false, valkeyv1.ReasonConfigRefused, msg)
	case out.answered == 0:
		return // no server answered yet: nothing to say
	default:
		msg := fmt.Sprintf("%d servers run spec.config's live keys (%s), set without a restart", out.answered, named)
		if len(out.waiting) > 0 {
			sort.Strings(out.waiting)
			msg += fmt.Sprintf("; %s get them once they answer", strings.Join(out.waiting, ", "))
		}
		c = status.Condition(valkeyv1.ConditionConfigApplied, true, valkeyv1.ReasonAppliedLive, msg)
	}
	st.configApplied = &c
}

// invalidClusterConfig is the cluster's ConfigApplied while its spec.config is one the
// workload controller would refuse (admission refuses it; an older CRD let it through), with
// a Warning event when the refusal is new: the config is held from the nodes (specHeld), and
// the servers run what they had.
func (r *Reconciler) invalidClusterConfig(st *clusterState) metav1.Condition {
	msg := fmt.Sprintf("spec.config is refused (%v): nothing of it is applied: the nodes keep the config they have, "+
		"their servers run it, and no pod rolls; correct spec.config", refusedConfig(st.Cluster.Spec.Config))
	if cur := status.Get(st.Cluster.Status.Conditions, valkeyv1.ConditionConfigApplied); cur == nil || cur.Message != msg {
		r.Recorder.Eventf(st.Cluster, nil, corev1.EventTypeWarning, valkeyv1.EventInvalidConfig, "CheckConfig", "%s", truncate(msg, 1000))
	}
	return status.Condition(valkeyv1.ConditionConfigApplied, false, valkeyv1.ReasonInvalidConfig, msg)
}

// refusedBy lists each error the servers gave once, with the nodes that gave it.
func refusedBy(byError map[string][]string) string {
	parts := make([]string, 0, len(byError))
	for e, nodes := range byError {
		sort.Strings(nodes)
		parts = append(parts, fmt.Sprintf("%s (on %s)", e, strings.Join(nodes, ", ")))
	}
	sort.Strings(parts)
	return strings.Join(parts, "; ")
}

func orNone(s string) string {
	if s == "" {
		return "none set"
	}
	return s
}
