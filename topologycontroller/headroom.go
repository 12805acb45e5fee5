package topologycontroller

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// A save (BGSAVE, an AOF rewrite) writes the whole data set again beside the copy on disk
// and replaces it only once done: a volume holds the data set its memory bound allows only
// when it is at least twice that bound. VolumeHeadroom says whether the spec allows it,
// before any volume fills up.

// memoryBound is what bounds a server's data set: bytes, and how the spec says it.
type memoryBound struct {
	bytes int64
	// what names the setting, as a message shows it ("maxmemory 1gb").
	what string
	// fromLimit: the bound is the container's memory limit (no maxmemory is set).
	fromLimit bool
}

// boundOf is the data set's bound in spec: maxmemory (Valkey's units; 0 is no bound), else
// the container's memory limit; nil when neither bounds it. A maxmemory that does not parse
// is left to the server, which refuses it: the memory limit is taken instead.
func boundOf(spec *valkeyv1.ServerSpec) *memoryBound {
	for k, v := range spec.Config {
		if !strings.EqualFold(k, "maxmemory") {
			continue
		}
		b, ok := parseValkeyMemory(v)
		if ok && b == 0 {
			return nil // maxmemory 0: the data set is not bounded, whatever the limit
		}
		if ok {
			return &memoryBound{bytes: b, what: "maxmemory " + strings.TrimSpace(v)}
		}
	}
	if q, ok := spec.Resources.Limits[corev1.ResourceMemory]; ok && q.Value() > 0 {
		return &memoryBound{bytes: q.Value(), what: "the memory limit " + q.String(), fromLimit: true}
	}
	return nil
}

// valkeyUnits are the memory units valkey.conf accepts (case-insensitive).
var valkeyUnits = map[string]int64{
	"": 1, "b": 1, "k": 1000, "kb": 1024, "m": 1000 * 1000, "mb": 1024 * 1024,
	"g": 1000 * 1000 * 1000, "gb": 1024 * 1024 * 1024,
}

// parseValkeyMemory parses a memory figure as valkey.conf does: digits, then an optional
// unit (k=1000, kb=1024, m, mb, g, gb; case-insensitive).
func parseValkeyMemory(s string) (int64, bool) {
	s = strings.ToLower(strings.TrimSpace(s))
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	unit, ok := valkeyUnits[s[i:]]
	if i == 0 || !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(s[:i], 10, 64)
	if err != nil || n > (1<<62)/unit {
		return 0, false
	}
	return n * unit, true
}

// volumeBound is the most a node's volume holds under p: autoGrow's maxSize when it is set,
// else size; and how a message names it.
func volumeBound(p *valkeyv1.PersistenceSpec) (resource.Quantity, string) {
	if p.AutoGrow != nil {
		return p.AutoGrow.MaxSize, "persistence.autoGrow.maxSize"
	}
	return p.Size, "persistence.size"
}

// headroomCondition is the cluster's VolumeHeadroom for spec; nil without persistence (the
// condition is then absent).
func headroomCondition(spec *valkeyv1.ServerSpec) *metav1.Condition {
	p := spec.Persistence
	if p == nil {
		return nil
	}
	var c metav1.Condition
	vol, field := volumeBound(p)
	m := boundOf(spec)
	switch {
	case m == nil:
		c = status.Condition(valkeyv1.ConditionVolumeHeadroom, true, valkeyv1.ReasonNoMemoryBound, fmt.Sprintf(
			"neither maxmemory nor a memory limit bounds the data set, so no volume size can be said to hold it: watch the nodes' volume usage (status.volume.usage) or enable persistence.autoGrow (%s is %s)",
			field, vol.String()))
	case vol.Value()/2 >= m.bytes:
		c = status.Condition(valkeyv1.ConditionVolumeHeadroom, true, valkeyv1.ReasonSufficientHeadroom, fmt.Sprintf(
			"%s is %s: it holds twice the data set %s allows (%s), the copy on disk and a save written beside it",
			field, vol.String(), m.what, bytesQuantity(2*m.bytes)))
	default:
		c = status.Condition(valkeyv1.ConditionVolumeHeadroom, false, valkeyv1.ReasonInsufficientHeadroom, insufficientMessage(p, m, vol, field))
	}
	return &c
}

// insufficientMessage says that the volume cannot hold two copies of the data set m
// allows, and what to raise or lower.
func insufficientMessage(p *valkeyv1.PersistenceSpec, m *memoryBound, vol resource.Quantity, field string) string {
	need := bytesQuantity(2 * m.bytes)
	raise := fmt.Sprintf("raise it, or set persistence.autoGrow with maxSize ≥ %s", need)
	if p.AutoGrow != nil {
		raise = "raise it"
	}
	lower := "lower maxmemory"
	if m.fromLimit {
		lower = "set a lower maxmemory in spec.config"
	}
	return fmt.Sprintf("%s allows a data set a save writes twice (the copy on disk and the one being written): the volume needs %s; %s is %s: %s, or %s",
		m.what, need, field, vol.String(), raise, lower)
}

// bytesQuantity is n bytes as the shorter of its binary and decimal forms ("2Gi", "2G").
func bytesQuantity(n int64) string {
	bin := resource.NewQuantity(n, resource.BinarySI).String()
	dec := resource.NewQuantity(n, resource.DecimalSI).String()
	if len(dec) < len(bin) {
		return dec
	}
	return bin
}

// noteHeadroom decides the cluster's VolumeHeadroom this round, with a Warning event when
// it turns False (or says something else while False).
func (r *Reconciler) noteHeadroom(st *clusterState) {
	c := headroomCondition(&st.Cluster.Spec.ServerSpec)
	st.headroom = c
	if c == nil || c.Status != metav1.ConditionFalse {
		return
	}
	if cur := status.Get(st.Cluster.Status.Conditions, valkeyv1.ConditionVolumeHeadroom); cur == nil || cur.Status != c.Status || cur.Message != c.Message {
		r.event(st.State, nil, corev1.EventTypeWarning, valkeyv1.ReasonInsufficientHeadroom, "CheckHeadroom", "%s", c.Message)
	}
}
