package volumecontroller

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// claimWith builds a claim requesting req, with capacity capacity ("" for none) in phase.
func claimWith(req, capacity string, phase corev1.PersistentVolumeClaimPhase) *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "valkey-n-data"},
		Spec: corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(req)}}},
		Status: corev1.PersistentVolumeClaimStatus{Phase: phase},
	}
	if capacity != "" {
		c.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(capacity)}
	}
	return c
}

func withCondition(c *corev1.PersistentVolumeClaim, t corev1.PersistentVolumeClaimConditionType, s corev1.ConditionStatus, msg string) *corev1.PersistentVolumeClaim {
	c.Status.Conditions = append(c.Status.Conditions, corev1.PersistentVolumeClaimCondition{Type: t, Status: s, Message: msg})
	return c
}

func withAllocated(c *corev1.PersistentVolumeClaim, s corev1.ClaimResourceStatus) *corev1.PersistentVolumeClaim {
	c.Status.AllocatedResourceStatuses = map[corev1.ResourceName]corev1.ClaimResourceStatus{corev1.ResourceStorage: s}
	return c
}

func TestSizeVerdict(t *testing.T) {
	bound := corev1.ClaimBound
	tests := []struct {
		name    string
		desired string
		claim   *corev1.PersistentVolumeClaim
		blocked *sized
		ok      bool
		reason  string
		message string
	}{
		{"sized", "1Gi", claimWith("1Gi", "1Gi", bound), nil, true, valkeyv1.ReasonSized, "has 1Gi"},
		{"provider rounded up", "1Gi", claimWith("1Gi", "10Gi", bound), nil, true, valkeyv1.ReasonSized, "has 10Gi"},
		{"grown by hand, never shrunk", "2Gi", claimWith("5Gi", "5Gi", bound), nil, true, valkeyv1.ReasonLargerThanRequested, "never shrunk"},
		{"refusal does not matter once large enough", "1Gi", claimWith("1Gi", "1Gi", bound), &sized{false, valkeyv1.ReasonExpansionNotSupported, "no"}, true, valkeyv1.ReasonSized, ""},
		{"expansion refused", "2Gi", claimWith("1Gi", "1Gi", bound), &sized{false, valkeyv1.ReasonExpansionNotSupported, "StorageClass x does not allow"}, false, valkeyv1.ReasonExpansionNotSupported, "does not allow"},
		{"pending, no capacity", "1Gi", claimWith("1Gi", "", corev1.ClaimPending), nil, false, valkeyv1.ReasonPending, "until it is bound"},
		{"not bound yet, grows once bound", "2Gi", claimWith("1Gi", "1Gi", corev1.ClaimPending), nil, false, valkeyv1.ReasonResizing, "once it is bound"},
		{"request patched, nothing reported yet", "2Gi", claimWith("2Gi", "1Gi", bound), nil, false, valkeyv1.ReasonResizing, "1Gi of 2Gi"},
		{"Resizing condition", "2Gi", withCondition(claimWith("2Gi", "1Gi", bound), corev1.PersistentVolumeClaimResizing, corev1.ConditionTrue, ""), nil, false, valkeyv1.ReasonResizing, ""},
		{"controller resize in progress", "2Gi", withAllocated(claimWith("2Gi", "1Gi", bound), corev1.PersistentVolumeClaimControllerResizeInProgress), nil, false, valkeyv1.ReasonResizing, ""},
		{"file system pending (condition)", "2Gi", withCondition(claimWith("2Gi", "1Gi", bound), corev1.PersistentVolumeClaimFileSystemResizePending, corev1.ConditionTrue, ""), nil, false, valkeyv1.ReasonFileSystemResizePending, "on the node"},
		{"file system pending (allocated)", "2Gi", withAllocated(claimWith("2Gi", "1Gi", bound), corev1.PersistentVolumeClaimNodeResizePending), nil, false, valkeyv1.ReasonFileSystemResizePending, ""},
		{"node resize in progress", "2Gi", withAllocated(claimWith("2Gi", "1Gi", bound), corev1.PersistentVolumeClaimNodeResizeInProgress), nil, false, valkeyv1.ReasonFileSystemResizePending, ""},
		{"controller error", "2Gi", withCondition(claimWith("2Gi", "1Gi", bound), corev1.PersistentVolumeClaimControllerResizeError, corev1.ConditionTrue, "quota"), nil, false, valkeyv1.ReasonResizeFailed, "ControllerResizeError: quota"},
		{"node error", "2Gi", withCondition(claimWith("2Gi", "1Gi", bound), corev1.PersistentVolumeClaimNodeResizeError, corev1.ConditionTrue, "fs"), nil, false, valkeyv1.ReasonResizeFailed, "NodeResizeError: fs"},
		{"error condition False is ignored", "2Gi", withCondition(claimWith("2Gi", "1Gi", bound), corev1.PersistentVolumeClaimControllerResizeError, corev1.ConditionFalse, ""), nil, false, valkeyv1.ReasonResizing, ""},
		{"controller infeasible", "2Gi", withAllocated(claimWith("2Gi", "1Gi", bound), corev1.PersistentVolumeClaimControllerResizeInfeasible), nil, false, valkeyv1.ReasonResizeFailed, "ControllerResizeInfeasible"},
		{"node infeasible", "2Gi", withAllocated(claimWith("2Gi", "1Gi", bound), corev1.PersistentVolumeClaimNodeResizeInfeasible), nil, false, valkeyv1.ReasonResizeFailed, "NodeResizeInfeasible"},
		{"error wins over file system pending", "2Gi", withCondition(withCondition(claimWith("2Gi", "1Gi", bound),
			corev1.PersistentVolumeClaimFileSystemResizePending, corev1.ConditionTrue, ""), corev1.PersistentVolumeClaimNodeResizeError, corev1.ConditionTrue, "x"), nil, false, valkeyv1.ReasonResizeFailed, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := sizeVerdict(resource.MustParse(tt.desired), tt.claim, tt.blocked)
			if v.OK != tt.ok || v.Reason != tt.reason || !strings.Contains(v.Message, tt.message) {
				t.Errorf("got %+v, want %v %s containing %q", v, tt.ok, tt.reason, tt.message)
			}
		})
	}
}

func TestNeedsExpansion(t *testing.T) {
	tests := []struct {
		desired, req string
		want         bool
	}{
		{"2Gi", "1Gi", true},
		{"1Gi", "1Gi", false},
		{"1Gi", "1024Mi", false},
		{"1Gi", "5Gi", false},
	}
	for _, tt := range tests {
		if got := needsExpansion(resource.MustParse(tt.desired), claimWith(tt.req, "", corev1.ClaimBound)); got != tt.want {
			t.Errorf("desired %s, request %s: %v", tt.desired, tt.req, got)
		}
	}
}

func TestExpansionRefusal(t *testing.T) {
	claim := claimWith("1Gi", "1Gi", corev1.ClaimBound)
	sc := func(expand *bool) *storagev1.StorageClass {
		return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "x"}, AllowVolumeExpansion: expand}
	}
	tests := []struct {
		name  string
		class classRef
		want  string
	}{
		{"allowed", classRef{Name: "x", Class: sc(ptr.To(true))}, ""},
		{"not allowed", classRef{Name: "x", Class: sc(ptr.To(false))}, "does not allow"},
		{"unset", classRef{Name: "x", Class: sc(nil)}, "does not allow"},
		{"class gone", classRef{Name: "x"}, "StorageClass x not found"},
		{"no default", classRef{}, "default StorageClass not found"},
		{"no class", classRef{None: true}, "no StorageClass"},
	}
	for _, tt := range tests {
		got := expansionRefusal(claim, tt.class)
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestReadyVerdict(t *testing.T) {
	wffc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "local"}, VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer)}
	immediate := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "gp3"}, VolumeBindingMode: ptr.To(storagev1.VolumeBindingImmediate)}
	terminating := claimWith("1Gi", "1Gi", corev1.ClaimBound)
	terminating.DeletionTimestamp = ptr.To(metav1.Now())
	tests := []struct {
		name   string
		claim  *corev1.PersistentVolumeClaim
		class  classRef
		ok     bool
		reason string
	}{
		{"bound", claimWith("1Gi", "1Gi", corev1.ClaimBound), classRef{Name: "gp3", Class: immediate}, true, valkeyv1.ReasonBound},
		{"bound, class since deleted", claimWith("1Gi", "1Gi", corev1.ClaimBound), classRef{Name: "gp3"}, true, valkeyv1.ReasonBound},
		{"pending, first consumer", claimWith("1Gi", "", corev1.ClaimPending), classRef{Name: "local", Class: wffc}, true, valkeyv1.ReasonWaitingForFirstConsumer},
		{"pending, immediate", claimWith("1Gi", "", corev1.ClaimPending), classRef{Name: "gp3", Class: immediate}, false, valkeyv1.ReasonPending},
		{"pending, no class", claimWith("1Gi", "", corev1.ClaimPending), classRef{None: true}, false, valkeyv1.ReasonPending},
		{"pending, class missing", claimWith("1Gi", "", corev1.ClaimPending), classRef{Name: "gp3"}, false, valkeyv1.ReasonStorageClassNotFound},
		{"pending, no default", claimWith("1Gi", "", corev1.ClaimPending), classRef{}, false, valkeyv1.ReasonStorageClassNotFound},
		{"lost", claimWith("1Gi", "1Gi", corev1.ClaimLost), classRef{Name: "gp3", Class: immediate}, false, valkeyv1.ReasonClaimLost},
		{"terminating", terminating, classRef{Name: "gp3", Class: immediate}, false, valkeyv1.ReasonClaimTerminating},
	}
	for _, tt := range tests {
		ok, reason, msg := readyVerdict(tt.claim, tt.class)
		if ok != tt.ok || reason != tt.reason || msg == "" {
			t.Errorf("%s: %v %s %q, want %v %s", tt.name, ok, reason, msg, tt.ok, tt.reason)
		}
	}
}
