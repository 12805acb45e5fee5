package volumecontroller

import (
	"strings"
	"testing"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func snapClass(name, driver string, isDefault bool) snapshotv1.VolumeSnapshotClass {
	c := snapshotv1.VolumeSnapshotClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Driver: driver}
	if isDefault {
		c.Annotations = map[string]string{annotationDefaultSnapshotClass: "true"}
	}
	return c
}

// The class of a claim's snapshot: the named one if it exists and is of the claim's
// driver, else the default class of that driver, else its only class; otherwise a refusal
// that names the driver and what to do.
func TestPickSnapshotClass(t *testing.T) {
	fast := classRef{Name: "fast", Class: &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fast"}, Provisioner: "csi.a"}}
	cases := []struct {
		name    string
		named   string
		storage classRef
		classes []snapshotv1.VolumeSnapshotClass
		want    string
		refusal []string
	}{
		{"the default class of the driver", "", fast,
			[]snapshotv1.VolumeSnapshotClass{snapClass("b-default", "csi.b", true), snapClass("a-plain", "csi.a", false), snapClass("a-default", "csi.a", true)},
			"a-default", nil},
		{"the only class of the driver, none marked", "", fast,
			[]snapshotv1.VolumeSnapshotClass{snapClass("b-default", "csi.b", true), snapClass("a-plain", "csi.a", false)}, "a-plain", nil},
		{"no class of the driver", "", fast,
			[]snapshotv1.VolumeSnapshotClass{snapClass("b-default", "csi.b", true)}, "", []string{"no VolumeSnapshotClass has driver csi.a", "StorageClass fast", "create one"}},
		{"several classes of the driver, none marked", "", fast,
			[]snapshotv1.VolumeSnapshotClass{snapClass("a2", "csi.a", false), snapClass("a1", "csi.a", false)}, "", []string{"a1, a2", "none is marked default"}},
		{"several marked default", "", fast,
			[]snapshotv1.VolumeSnapshotClass{snapClass("a2", "csi.a", true), snapClass("a1", "csi.a", true)}, "", []string{"a1, a2", "all marked default"}},
		{"the named class", "a-plain", fast,
			[]snapshotv1.VolumeSnapshotClass{snapClass("a-plain", "csi.a", false), snapClass("a-default", "csi.a", true)}, "a-plain", nil},
		{"a named class of another driver", "b-default", fast,
			[]snapshotv1.VolumeSnapshotClass{snapClass("b-default", "csi.b", true)}, "", []string{"VolumeSnapshotClass b-default is of driver csi.b", "provisioned by csi.a"}},
		{"a named class that does not exist", "gone", fast, nil, "", []string{"VolumeSnapshotClass gone", "does not exist"}},
		{"a claim without a class", "", classRef{None: true},
			[]snapshotv1.VolumeSnapshotClass{snapClass("a-default", "csi.a", true)}, "", []string{"driver of its snapshots is unknown"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, refusal := pickSnapshotClass(tc.named, "valkey-c-0-0-data", tc.storage, tc.classes)
			if got != tc.want {
				t.Fatalf("class %q, want %q (refusal %q)", got, tc.want, refusal)
			}
			if (refusal != "") != (tc.refusal != nil) {
				t.Fatalf("refusal %q, want one containing %q", refusal, tc.refusal)
			}
			for _, s := range tc.refusal {
				if !strings.Contains(refusal, s) {
					t.Fatalf("refusal %q does not say %q", refusal, s)
				}
			}
		})
	}
}
