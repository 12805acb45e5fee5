package workloadcontroller

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/workloadcontroller/valkeyconf"
)

// directivesOf renders a spec's config and parses it as valkey-server would.
func directivesOf(t *testing.T, spec valkeyv1.ValkeyNodeSpec) map[string][]string {
	t.Helper()
	conf, err := renderConfig(&spec)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	ds, err := valkeyconf.Parse(conf)
	if err != nil {
		t.Fatalf("parse rendered config: %v\n%s", err, conf)
	}
	out := map[string][]string{}
	for _, d := range ds {
		if _, dup := out[d.Key]; dup {
			t.Fatalf("directive %s rendered twice:\n%s", d.Key, conf)
		}
		out[d.Key] = d.Args
	}
	return out
}

func TestRenderConfigPersistence(t *testing.T) {
	size := resource.MustParse("1Gi")
	for _, tc := range []struct {
		name        string
		persistence *valkeyv1.PersistenceSpec
		want        map[string]string
		absent      []string
	}{{
		name:        "no persistence: no RDB, no AOF, data dir still /data",
		persistence: nil,
		want: map[string]string{
			"dir": "/data", "cluster-config-file": "/data/nodes.conf", "cluster-enabled": "yes",
			"save": "", "appendonly": "no", "shutdown-on-sigterm": "default", "port": "6379",
			"cluster-port": "16379", "protected-mode": "no", "bind": "* -::*", "repl-backlog-size": "64mb",
		},
		absent: []string{"appendfsync"},
	}, {
		name:        "persistence: RDB with default save points, saves on SIGTERM",
		persistence: &valkeyv1.PersistenceSpec{Size: size},
		want: map[string]string{
			"dir": "/data", "cluster-config-file": "/data/nodes.conf", "save": "3600 1 300 100 60 10000",
			"shutdown-on-sigterm": "save", "appendonly": "no", "dbfilename": "dump.rdb", "repl-backlog-size": "64mb",
		},
		absent: []string{"appendfsync"},
	}, {
		name: "persistence: custom save points and AOF",
		persistence: &valkeyv1.PersistenceSpec{Size: size,
			RDB: &valkeyv1.RDBSpec{SavePoints: []string{"900 1"}},
			AOF: &valkeyv1.AOFSpec{Enabled: true, Fsync: "always"}},
		want: map[string]string{"save": "900 1", "appendonly": "yes", "appendfsync": "always", "shutdown-on-sigterm": "save"},
	}, {
		name: "persistence: AOF only",
		persistence: &valkeyv1.PersistenceSpec{Size: size,
			RDB: &valkeyv1.RDBSpec{Enabled: ptr.To(false)},
			AOF: &valkeyv1.AOFSpec{Enabled: true}},
		want: map[string]string{"save": "", "appendonly": "yes", "appendfsync": "everysec", "shutdown-on-sigterm": "default"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := directivesOf(t, valkeyv1.ValkeyNodeSpec{Persistence: tc.persistence})
			for k, v := range tc.want {
				if args, ok := got[k]; !ok || len(args) != 1 || args[0] != v {
					t.Errorf("%s = %q, want %q", k, args, v)
				}
			}
			for _, k := range tc.absent {
				if _, ok := got[k]; ok {
					t.Errorf("%s rendered, want absent", k)
				}
			}
		})
	}
}

func TestRenderConfigRefusesBadSavePoints(t *testing.T) {
	_, err := renderConfig(&valkeyv1.ValkeyNodeSpec{Persistence: &valkeyv1.PersistenceSpec{
		Size: resource.MustParse("1Gi"), RDB: &valkeyv1.RDBSpec{SavePoints: []string{"1 1\ndir /tmp"}},
	}})
	if ce := asConfigError(err); ce == nil || ce.Key != "persistence.rdb.savePoints" {
		t.Fatalf("err %v, want a ConfigError on persistence.rdb.savePoints", err)
	}
}
