package topologycontroller

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// Valkey's memory units: k and m and g are powers of 1000, kb and mb and gb of 1024, in
// any case; anything else does not parse.
func TestParseValkeyMemory(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1048576", 1048576, true}, {"0", 0, true}, {"100b", 100, true},
		{"1k", 1000, true}, {"1kb", 1024, true}, {"2m", 2_000_000, true}, {"2MB", 2 << 20, true},
		{"1g", 1_000_000_000, true}, {"1gb", 1 << 30, true}, {"1Gb", 1 << 30, true}, {" 3GB ", 3 << 30, true},
		{"", 0, false}, {"gb", 0, false}, {"1.5gb", 0, false}, {"1gi", 0, false}, {"-1", 0, false}, {"1tb", 0, false},
	} {
		got, ok := parseValkeyMemory(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseValkeyMemory(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestHeadroomCondition(t *testing.T) {
	q := resource.MustParse
	persistence := func(size string) *valkeyv1.PersistenceSpec { return &valkeyv1.PersistenceSpec{Size: q(size)} }
	grow := func(size, maxSize string) *valkeyv1.PersistenceSpec {
		p := persistence(size)
		p.AutoGrow = &valkeyv1.AutoGrowSpec{MaxSize: q(maxSize)}
		return p
	}
	limit := func(mem string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: q(mem)}}
	}
	for _, tc := range []struct {
		name string
		spec valkeyv1.ServerSpec
		want string // "Status/Reason", "" when absent
		msg  []string
	}{
		{"no persistence: absent", valkeyv1.ServerSpec{Config: map[string]string{"maxmemory": "1gb"}}, "", nil},
		{"no bound", valkeyv1.ServerSpec{Persistence: persistence("1Gi")}, "True/NoMemoryBound",
			[]string{"neither maxmemory nor a memory limit bounds the data set", "persistence.autoGrow"}},
		{"maxmemory 0 is no bound, whatever the limit", valkeyv1.ServerSpec{Persistence: persistence("1Gi"), Resources: limit("4Gi"),
			Config: map[string]string{"maxmemory": "0"}}, "True/NoMemoryBound", nil},
		{"maxmemory 1gb, size 1Gi", valkeyv1.ServerSpec{Persistence: persistence("1Gi"), Config: map[string]string{"maxmemory": "1gb"}},
			"False/InsufficientHeadroom", []string{"maxmemory 1gb allows", "the volume needs 2Gi", "persistence.size is 1Gi",
				"set persistence.autoGrow with maxSize ≥ 2Gi", "lower maxmemory"}},
		{"maxmemory 1gb, size 2Gi: exactly twice", valkeyv1.ServerSpec{Persistence: persistence("2Gi"), Config: map[string]string{"maxmemory": "1gb"}},
			"True/Sufficient", []string{"persistence.size is 2Gi", "maxmemory 1gb", "(2Gi)"}},
		{"maxmemory in decimal units", valkeyv1.ServerSpec{Persistence: persistence("1Gi"), Config: map[string]string{"MaxMemory": "500m"}},
			"True/Sufficient", []string{"maxmemory 500m", "(1G)"}},
		{"maxmemory wins over the limit", valkeyv1.ServerSpec{Persistence: persistence("3Gi"), Resources: limit("8Gi"),
			Config: map[string]string{"maxmemory": "1gb"}}, "True/Sufficient", nil},
		{"the memory limit bounds it", valkeyv1.ServerSpec{Persistence: persistence("1Gi"), Resources: limit("1Gi")},
			"False/InsufficientHeadroom", []string{"the memory limit 1Gi allows", "the volume needs 2Gi", "set a lower maxmemory in spec.config"}},
		{"a maxmemory that does not parse: the limit", valkeyv1.ServerSpec{Persistence: persistence("4Gi"), Resources: limit("1Gi"),
			Config: map[string]string{"maxmemory": "lots"}}, "True/Sufficient", []string{"the memory limit 1Gi"}},
		{"autoGrow's maxSize counts", valkeyv1.ServerSpec{Persistence: grow("1Gi", "4Gi"), Config: map[string]string{"maxmemory": "2gb"}},
			"True/Sufficient", []string{"persistence.autoGrow.maxSize is 4Gi"}},
		{"autoGrow's maxSize too small", valkeyv1.ServerSpec{Persistence: grow("1Gi", "3Gi"), Config: map[string]string{"maxmemory": "2gb"}},
			"False/InsufficientHeadroom", []string{"the volume needs 4Gi", "persistence.autoGrow.maxSize is 3Gi: raise it, or lower maxmemory"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := headroomCondition(&tc.spec)
			got := ""
			if c != nil {
				got = string(c.Status) + "/" + c.Reason
				if c.Type != valkeyv1.ConditionVolumeHeadroom {
					t.Errorf("type %s", c.Type)
				}
			}
			if got != tc.want {
				t.Fatalf("VolumeHeadroom = %q, want %q (%v)", got, tc.want, c)
			}
			for _, m := range tc.msg {
				if !strings.Contains(c.Message, m) {
					t.Errorf("message %q does not say %q", c.Message, m)
				}
			}
		})
	}
}
