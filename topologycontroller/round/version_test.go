package round

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/clusternodes"
)

func TestServerVersions(t *testing.T) {
	for _, tc := range []struct {
		infos []map[string]string
		want  string
	}{
		{[]map[string]string{{"valkey_version": "9.1.2", "redis_version": "7.2.4"}, {"valkey_version": "9.1.2"}}, "9.1.2"},
		{[]map[string]string{{"valkey_version": "8.1.8"}, {"valkey_version": "9.1.2"}, {"valkey_version": "8.1.8"}}, "8.1.8 ×2, 9.1.2 ×1"},
		{[]map[string]string{{"redis_version": "7.0.15"}}, "redis 7.0.15"},
		{[]map[string]string{{}}, ""},
	} {
		st := NewState(&valkeyv1.ValkeyCluster{}, nil, nil)
		for i, info := range tc.infos {
			n := &valkeyv1.ValkeyNode{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint(i)}}
			st.Nodes = append(st.Nodes, n)
			st.Members[n.Name] = &Member{Node: n, Self: &clusternodes.Node{}, Repl: info}
		}
		if got := ServerVersions(st); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.infos, got, tc.want)
		}
	}
}
