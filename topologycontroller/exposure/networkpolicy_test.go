package exposure

import (
	"testing"

	"k8s.io/utils/ptr"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// TestNetworkPolicyPlaintextPort: tls.plaintextPort is admitted from the same clients as the
// TLS client port; without it only 6379 is.
func TestNetworkPolicyPlaintextPort(t *testing.T) {
	for _, tc := range []struct {
		name string
		tls  *valkeyv1.TLSSpec
		want []int32
	}{
		{"no TLS", nil, []int32{6379}},
		{"TLS only", &valkeyv1.TLSSpec{Generate: true}, []int32{6379}},
		{"TLS and a plaintext port", &valkeyv1.TLSSpec{Generate: true, PlaintextPort: ptr.To[int32](6380)}, []int32{6379, 6380}},
	} {
		vc := &valkeyv1.ValkeyCluster{}
		vc.Name, vc.Namespace = "c", "ns"
		vc.Spec.TLS = tc.tls
		np := desiredNetworkPolicy(vc, 6379, "op")
		clients := np.Spec.Ingress[1]
		var got []int32
		for _, p := range clients.Ports {
			got = append(got, p.Port.IntVal)
		}
		if len(got) != len(tc.want) || got[0] != tc.want[0] || (len(got) > 1 && got[1] != tc.want[1]) {
			t.Errorf("%s: client ports %v, want %v", tc.name, got, tc.want)
		}
		if bus := np.Spec.Ingress[0].Ports; len(bus) != 1 || bus[0].Port.IntVal != 16379 {
			t.Errorf("%s: bus rule %v", tc.name, bus)
		}
	}
}
