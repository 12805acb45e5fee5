package workloadcontroller

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/valkeyconf"
)

// TestRenderConfigPersistence checks that a node's spec renders the config of the matching
// valkeyconf parameters: the data directory, RDB and AOF from spec.persistence, and
// spec.config. What those parameters render to is checked in valkeyconf.
func TestRenderConfigPersistence(t *testing.T) {
	size := resource.MustParse("1Gi")
	config := map[string]string{"maxmemory": "100mb"}
	for _, tc := range []struct {
		name string
		spec valkeyv1.ValkeyNodeSpec
		want valkeyconf.Params
	}{{
		name: "no persistence: no RDB, no AOF, data dir still /data",
		spec: valkeyv1.ValkeyNodeSpec{ServerSpec: valkeyv1.ServerSpec{Config: config}},
		want: valkeyconf.Params{DataDir: "/data", Config: config},
	}, {
		name: "persistence: RDB with default save points",
		spec: valkeyv1.ValkeyNodeSpec{ServerSpec: valkeyv1.ServerSpec{Persistence: &valkeyv1.PersistenceSpec{Size: size}}},
		want: valkeyconf.Params{DataDir: "/data", Persistence: true, RDB: true},
	}, {
		name: "persistence: custom save points and AOF",
		spec: valkeyv1.ValkeyNodeSpec{ServerSpec: valkeyv1.ServerSpec{Persistence: &valkeyv1.PersistenceSpec{Size: size,
			RDB: &valkeyv1.RDBSpec{SavePoints: []string{"900 1"}},
			AOF: &valkeyv1.AOFSpec{Enabled: true, Fsync: "always"}}}},
		want: valkeyconf.Params{DataDir: "/data", Persistence: true, RDB: true, SavePoints: []string{"900 1"}, AOF: true, Fsync: "always"},
	}, {
		name: "persistence: AOF only",
		spec: valkeyv1.ValkeyNodeSpec{ServerSpec: valkeyv1.ServerSpec{Persistence: &valkeyv1.PersistenceSpec{Size: size,
			RDB: &valkeyv1.RDBSpec{Enabled: ptr.To(false)},
			AOF: &valkeyv1.AOFSpec{Enabled: true}}}},
		want: valkeyconf.Params{DataDir: "/data", Persistence: true, AOF: true},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := renderConfig(&valkeyv1.ValkeyNode{Spec: tc.spec}, "")
			if err != nil {
				t.Fatalf("render: %v", err)
			}
			want, err := valkeyconf.Render(tc.want)
			if err != nil {
				t.Fatalf("render %+v: %v", tc.want, err)
			}
			if got != want {
				t.Errorf("rendered:\n%s\nwant the config of %+v:\n%s", got, tc.want, want)
			}
		})
	}
}

func TestRenderConfigRefusesBadSavePoints(t *testing.T) {
	_, err := renderConfig(&valkeyv1.ValkeyNode{Spec: valkeyv1.ValkeyNodeSpec{ServerSpec: valkeyv1.ServerSpec{Persistence: &valkeyv1.PersistenceSpec{
		Size: resource.MustParse("1Gi"), RDB: &valkeyv1.RDBSpec{SavePoints: []string{"1 1\ndir /tmp"}},
	}}}}, "")
	if ce := asConfigError(err); ce == nil || ce.Key != "persistence.rdb.savePoints" {
		t.Fatalf("err %v, want a ConfigError on persistence.rdb.savePoints", err)
	}
}
