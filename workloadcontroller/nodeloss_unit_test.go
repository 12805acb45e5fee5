package workloadcontroller

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func hostTerm(values ...string) corev1.NodeSelectorTerm {
	return corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{
		Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: values,
	}}}
}

// Only a volume that every required term pins to the one host counts as local to it.
func TestPinnedTo(t *testing.T) {
	zone := corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{
		Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"a"},
	}}}
	for name, tc := range map[string]struct {
		terms []corev1.NodeSelectorTerm
		want  bool
	}{
		"local volume of the host":        {[]corev1.NodeSelectorTerm{hostTerm("k2")}, true},
		"local volume of another host":    {[]corev1.NodeSelectorTerm{hostTerm("k3")}, false},
		"any of several hosts":            {[]corev1.NodeSelectorTerm{hostTerm("k2", "k3")}, false},
		"a zonal volume":                  {[]corev1.NodeSelectorTerm{zone}, false},
		"one term pinned, another zonal":  {[]corev1.NodeSelectorTerm{hostTerm("k2"), zone}, false},
		"no node affinity (network disk)": {nil, false},
	} {
		pv := &corev1.PersistentVolume{}
		if tc.terms != nil {
			pv.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: tc.terms}}
		}
		if got := pinnedTo(pv, "k2"); got != tc.want {
			t.Errorf("%s: pinnedTo = %v, want %v", name, got, tc.want)
		}
	}
}

// The newest FailedCreate event of the StatefulSet's UID wins, whichever time field the
// recorder filled.
func TestNewestFailure(t *testing.T) {
	at := func(minute int) metav1.Time {
		return metav1.NewTime(time.Date(2026, 11, 30, 12, minute, 0, 0, time.UTC))
	}
	events := []corev1.Event{
		{InvolvedObject: corev1.ObjectReference{UID: "sts"}, Reason: "FailedCreate", Message: "older", LastTimestamp: at(1)},
		{InvolvedObject: corev1.ObjectReference{UID: "sts"}, Reason: "FailedCreate", Message: "newest", Series: &corev1.EventSeries{LastObservedTime: metav1.NewMicroTime(at(5).Time)}},
		{InvolvedObject: corev1.ObjectReference{UID: "old"}, Reason: "FailedCreate", Message: "earlier StatefulSet", LastTimestamp: at(9)},
		{InvolvedObject: corev1.ObjectReference{UID: "sts"}, Reason: "SuccessfulCreate", Message: "created", LastTimestamp: at(9)},
	}
	if got := newestFailure(events, "sts"); got != "newest" {
		t.Errorf("newestFailure = %q, want %q", got, "newest")
	}
	if got := newestFailure(events, "none"); got != "" {
		t.Errorf("newestFailure of an unknown UID = %q, want none", got)
	}
}
