package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// auditPolicy records the metadata of every write and nothing else.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  verbs: ["create", "update", "patch", "delete", "deletecollection"]
- level: None
`

// Audit is the API server's log of writes, for a breakdown of who wrote what.
type Audit struct {
	Path string
}

// NewAudit writes the audit policy into dir and returns the log and the kube-apiserver flags
// that make the API server keep it.
func NewAudit(dir string) (*Audit, map[string]string, error) {
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		return nil, nil, err
	}
	a := &Audit{Path: filepath.Join(dir, "audit.log")}
	return a, map[string]string{"audit-policy-file": policy, "audit-log-path": a.Path}, nil
}

// Offset is the log's size now: Writes(from) then counts what came after.
func (a *Audit) Offset() (int64, error) {
	st, err := os.Stat(a.Path)
	if os.IsNotExist(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// WriteKey is one kind of write: the client's program, the verb and the resource.
type WriteKey struct {
	Agent, Verb, Resource string
}

// Breakdown counts writes by WriteKey, and tells when each program wrote.
type Breakdown struct {
	Counts map[WriteKey]int
	// First and Last are each program's first and last write (received, by the API
	// server's clock); Done is when the last write of each WriteKey completed.
	First, Last map[string]time.Time
	Done        map[WriteKey]time.Time
}

// auditEvent is what the breakdown reads of an audit event.
type auditEvent struct {
	Stage     string    `json:"stage"`
	Received  time.Time `json:"requestReceivedTimestamp"`
	Completed time.Time `json:"stageTimestamp"`
	Verb      string    `json:"verb"`
	UserAgent string    `json:"userAgent"`
	ObjectRef struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
}

// Writes counts the writes logged after offset from, by program, verb and resource.
func (a *Audit) Writes(from int64) (Breakdown, error) {
	f, err := os.Open(a.Path)
	if err != nil {
		return Breakdown{}, err
	}
	defer func() { _ = f.Close() }()
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return Breakdown{}, err
	}
	out := Breakdown{Counts: map[WriteKey]int{}, First: map[string]time.Time{}, Last: map[string]time.Time{},
		Done: map[WriteKey]time.Time{}}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for sc.Scan() {
		var ev auditEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return Breakdown{}, fmt.Errorf("audit log: %w", err)
		}
		if ev.Stage != "ResponseComplete" {
			continue
		}
		res := ev.ObjectRef.Resource
		if ev.ObjectRef.Subresource != "" {
			res += "/" + ev.ObjectRef.Subresource
		}
		agent, _, _ := strings.Cut(ev.UserAgent, "/")
		key := WriteKey{Agent: agent, Verb: ev.Verb, Resource: res}
		out.Counts[key]++
		if ev.Completed.After(out.Done[key]) {
			out.Done[key] = ev.Completed
		}
		if f, ok := out.First[agent]; !ok || ev.Received.Before(f) {
			out.First[agent] = ev.Received
		}
		if ev.Received.After(out.Last[agent]) {
			out.Last[agent] = ev.Received
		}
	}
	return out, sc.Err()
}

// FanOutWrites are the writes that make a fan-out: each node's ValkeyNode, claim, volume
// status, ConfigMap and StatefulSet.
var FanOutWrites = []WriteKey{
	{"topology-controller", "create", "valkeynodes"},
	{"volume-controller", "create", "persistentvolumeclaims"},
	{"volume-controller", "patch", "valkeynodes/status"},
	{"workload-controller", "patch", "configmaps"},
	{"workload-controller", "patch", "statefulsets"},
}

// FanOutTime is how long after start the last of the FanOutWrites completed: seen (when a
// poll found the fan-out done) unless the log shows an earlier end.
func (b Breakdown) FanOutTime(start time.Time, seen time.Duration) time.Duration {
	var last time.Time
	for _, k := range FanOutWrites {
		if t := b.Done[k]; t.After(last) {
			last = t
		}
	}
	if !last.IsZero() && last.Sub(start) < seen {
		return last.Sub(start)
	}
	return seen
}

// Span is when agent wrote, in seconds after start: its first and its last write.
func (b Breakdown) Span(agent string, start time.Time) string {
	f, ok := b.First[agent]
	if !ok {
		return "no write"
	}
	return fmt.Sprintf("writes from %.1f s to %.1f s", f.Sub(start).Seconds(), b.Last[agent].Sub(start).Seconds())
}

// Lines lists agent's writes per node ("patch valkeynodes/status 2.00"), most first.
func (b Breakdown) Lines(agent string, nodes int) []string {
	type entry struct {
		key string
		n   int
	}
	var es []entry
	for k, n := range b.Counts {
		if k.Agent == agent {
			es = append(es, entry{k.Verb + " " + k.Resource, n})
		}
	}
	sort.Slice(es, func(i, j int) bool {
		if es[i].n != es[j].n {
			return es[i].n > es[j].n
		}
		return es[i].key < es[j].key
	})
	out := make([]string, 0, len(es))
	for _, e := range es {
		out = append(out, fmt.Sprintf("%s %.2f", e.key, float64(e.n)/float64(nodes)))
	}
	return out
}
