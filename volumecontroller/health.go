package volumecontroller

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
	"valkey.io/operator/internal/volumeusage"
)

// VolumeFullPercent is the usage at which a volume is reported full (VolumeHealthy=False,
// VolumeFull): a save writes the data set again beside the one on disk, so past it the
// next one is likely to fail.
const VolumeFullPercent = 95

// usageReport is what a node's figures give its status: status.volume.usage and
// VolumeHealthy.
type usageReport struct {
	Usage   *valkeyv1.VolumeUsage
	Healthy metav1.Condition
	// Figure is the published figure autoGrow acts on (nil while the node is not measured).
	Figure *volumeusage.Figure
}

// usageOf reports a node with persistence from what the poller published. Before the poller's
// first round (a restarted controller) the status as read is kept, so nothing flaps.
func usageOf(node *valkeyv1.ValkeyNode, u *nodeUsage) usageReport {
	var kept *valkeyv1.VolumeUsage
	if v := node.Status.Volume; v != nil {
		kept = v.Usage
	}
	if u == nil {
		cur := status.Get(node.Status.Conditions, valkeyv1.ConditionVolumeHealthy)
		if cur != nil && kept != nil && cur.Reason != valkeyv1.ReasonEphemeral {
			c := metav1.Condition{Type: cur.Type, Status: cur.Status, Reason: cur.Reason, Message: cur.Message}
			return usageReport{Usage: kept, Healthy: c}
		}
		return usageReport{Usage: kept, Healthy: notMeasured(kept, "no figure taken yet")}
	}
	if !u.measured {
		why := "no figure taken yet"
		if u.lastErr != "" {
			why = "valkey-start's metrics do not answer: " + u.lastErr
		}
		if u.published.At.IsZero() {
			return usageReport{Usage: kept, Healthy: notMeasured(kept, why)}
		}
		return usageReport{Usage: usageStatus(u.published), Healthy: notMeasured(usageStatus(u.published), why)}
	}
	fig := relevant(u.published, node.Spec.Persistence)
	return usageReport{Usage: usageStatus(fig), Healthy: healthVerdict(fig), Figure: &fig}
}

// relevant drops from a figure a failed BGSAVE of a server without save points (RDB off):
// such a server does not refuse writes for it, and nothing but a BGSAVE clears it.
func relevant(f volumeusage.Figure, p *valkeyv1.PersistenceSpec) volumeusage.Figure {
	if p.RDBEnabled() || !f.Failing() {
		return f
	}
	var kept []string
	for _, k := range strings.Split(f.Persistence, ",") {
		if k != "rdb" {
			kept = append(kept, k)
		}
	}
	f.Persistence = strings.Join(kept, ",")
	if f.Persistence == "" {
		f.Persistence = volumeusage.PersistenceOK
	}
	return f
}

// usageStatus is status.volume.usage for a figure.
func usageStatus(f volumeusage.Figure) *valkeyv1.VolumeUsage {
	return &valkeyv1.VolumeUsage{
		UsedBytes: f.UsedBytes, CapacityBytes: f.CapacityBytes, Percent: f.Percent(),
		Persistence: f.Persistence, MeasuredAt: metav1.NewTime(f.At.UTC().Truncate(time.Second)),
	}
}

// notMeasured is VolumeHealthy=Unknown: no figure is at hand.
func notMeasured(last *valkeyv1.VolumeUsage, why string) metav1.Condition {
	msg := why
	if last != nil {
		msg += fmt.Sprintf("; last figure %d%% used (%s of %s) at %s", last.Percent,
			volumeusage.Bytes(last.UsedBytes), volumeusage.Bytes(last.CapacityBytes), last.MeasuredAt.UTC().Format(time.RFC3339))
	}
	return metav1.Condition{Type: valkeyv1.ConditionVolumeHealthy, Status: metav1.ConditionUnknown, Reason: valkeyv1.ReasonNotMeasured, Message: msg}
}

// whatToDo is the advice of an unhealthy volume.
const whatToDo = "raise spec.persistence.size, enable spec.persistence.autoGrow (or raise its maxSize), or free space on the volume"

// healthVerdict is VolumeHealthy for a figure of a pod that answers.
func healthVerdict(f volumeusage.Figure) metav1.Condition {
	used := fmt.Sprintf("%d%% used (%s of %s)", f.Percent(), volumeusage.Bytes(f.UsedBytes), volumeusage.Bytes(f.CapacityBytes))
	switch {
	case f.Failing():
		return status.Condition(valkeyv1.ConditionVolumeHealthy, false, valkeyv1.ReasonPersistenceFailing, fmt.Sprintf(
			"the server cannot save (%s) and refuses writes with MISCONF until it can; the volume is %s: %s",
			failingSaves(f.Persistence), used, whatToDo))
	case f.Percent() >= VolumeFullPercent:
		return status.Condition(valkeyv1.ConditionVolumeHealthy, false, valkeyv1.ReasonVolumeFull, fmt.Sprintf(
			"the volume is %s, at least %d%%: the next save may not fit and writes would then be refused; %s",
			used, VolumeFullPercent, whatToDo))
	}
	return status.Condition(valkeyv1.ConditionVolumeHealthy, true, valkeyv1.ReasonVolumeHealthy, "the volume is "+used+" and the server saves")
}

// failingSaves names the saves that fail.
func failingSaves(kinds string) string {
	var out []string
	for _, k := range strings.Split(kinds, ",") {
		switch k {
		case "rdb":
			out = append(out, "its last BGSAVE failed")
		case "aof":
			out = append(out, "its last AOF write failed")
		default:
			out = append(out, k)
		}
	}
	return strings.Join(out, ", ")
}

// ephemeralHealth is VolumeHealthy without persistence.
func ephemeralHealth() metav1.Condition {
	return status.Condition(valkeyv1.ConditionVolumeHealthy, true, valkeyv1.ReasonEphemeral, "no persistence requested: nothing is measured")
}
