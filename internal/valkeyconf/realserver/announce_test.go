package realserver

import (
	"fmt"
	"strings"
	"testing"

	"valkey.io/operator/internal/valkeyconf"
)

// TestAnnouncedHostnameInRealServer starts two servers on configs rendered with
// AnnounceHostname, as nodes with spec.announce: hostname, shares the slots between them and
// checks that the server accepts both settings, that CLUSTER SLOTS names each node by its
// hostname, and that a redirect (MOVED) names the owner by its hostname and port.
func TestAnnouncedHostnameInRealServer(t *testing.T) {
	names := []string{"c-0-0.valkey-c-nodes.ns.svc.cluster.local", "c-1-0.valkey-c-nodes.ns.svc.cluster.local"}
	nodes := make([]*node, len(names))
	for i, name := range names {
		dir := t.TempDir()
		conf, err := valkeyconf.Render(valkeyconf.Params{DataDir: dir, AnnounceHostname: name})
		if err != nil {
			t.Fatal(err)
		}
		nodes[i] = startNode(t, conf, dir)
		for k, v := range map[string]string{"cluster-announce-hostname": name, "cluster-preferred-endpoint-type": "hostname"} {
			got, err := nodes[i].do(nodes[i].B().ConfigGet().Parameter(k).Build()).AsStrMap()
			if err != nil || got[k] != v {
				t.Fatalf("CONFIG GET %s = %q (%v), want %q", k, got, err, v)
			}
		}
	}
	a, b := nodes[0], nodes[1]
	a.must(a.B().ClusterAddslotsrange().StartSlotEndSlot().StartSlotEndSlot(0, 8191).Build())
	b.must(b.B().ClusterAddslotsrange().StartSlotEndSlot().StartSlotEndSlot(8192, 16383).Build())
	a.must(a.B().ClusterMeet().Ip(b.Host).Port(int64(b.Port)).Build())
	waitFor(t, "cluster_state:ok on both", func() bool {
		return a.clusterInfo()["cluster_state"] == "ok" && b.clusterInfo()["cluster_state"] == "ok"
	})

	waitFor(t, "CLUSTER SLOTS on b naming both nodes by hostname", func() bool {
		slots, err := b.do(b.B().ClusterSlots().Build()).ToArray()
		if err != nil || len(slots) != 2 {
			return false
		}
		seen := map[string]bool{}
		for _, r := range slots {
			e, err := r.ToArray()
			if err != nil || len(e) < 3 {
				return false
			}
			owner, err := e[2].ToArray()
			if err != nil || len(owner) < 2 {
				return false
			}
			host, _ := owner[0].ToString()
			seen[host] = true
		}
		return seen[names[0]] && seen[names[1]]
	})

	// "a" hashes to slot 15495 (b's), "b" to 3300 (a's): a GET of "b" at b is redirected to a.
	err := b.do(b.B().Get().Key("b").Build()).Error()
	want := fmt.Sprintf("MOVED 3300 %s:%d", names[0], a.Port)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("GET b at the other node: %v, want %q", err, want)
	}
}
