package monitoring

import (
	"fmt"
	"net"

	networkingv1 "k8s.io/api/networking/v1"
)

// HostPeers are the addresses this host's packets to a local cluster's pods come from (the
// route's source address towards each of its nodes' pod ranges), as NetworkPolicy peers: what
// a cluster's spec.network.metricsFrom names to let a Prometheus running on this host scrape
// it. The local cluster gives node K (of nodes) the pod range 10.88.(K-1).0/24.
func HostPeers(nodes int) ([]networkingv1.NetworkPolicyPeer, error) {
	seen := map[string]bool{}
	var out []networkingv1.NetworkPolicyPeer
	for k := 1; k <= nodes; k++ {
		// A UDP "connection" sends nothing; it only asks the kernel for the route's source.
		conn, err := net.Dial("udp4", fmt.Sprintf("10.88.%d.2:9", k-1))
		if err != nil {
			return nil, fmt.Errorf("route to node %d's pods: %w", k, err)
		}
		src := conn.LocalAddr().(*net.UDPAddr).IP.String()
		_ = conn.Close()
		if !seen[src] {
			seen[src] = true
			out = append(out, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: src + "/32"}})
		}
	}
	return out, nil
}
