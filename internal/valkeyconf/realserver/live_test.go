package realserver

import (
	"testing"

	"valkey.io/operator/internal/valkeyconf"
)

// configGet is a setting's value as the server reports it.
func (n *node) configGet(key string) string {
	n.t.Helper()
	kv, err := n.must(n.B().ConfigGet().Parameter(key).Build()).AsStrMap()
	if err != nil {
		n.t.Fatalf("CONFIG GET %s: %v", key, err)
	}
	v, ok := kv[key]
	if !ok {
		n.t.Fatalf("CONFIG GET %s: the server does not know the key", key)
	}
	return v
}

// TestLiveKeysInRealServer checks the live-key table against the server: every key is set
// at runtime, its default is the server's own (setting it back changes nothing a server
// started without it reports), and one CONFIG SET of all of them with one refused value
// changes none.
func TestLiveKeysInRealServer(t *testing.T) {
	conf, err := valkeyconf.Render(valkeyconf.Params{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	n := startNode(t, conf, t.TempDir())
	fresh := map[string]string{}
	for _, k := range valkeyconf.LiveKeys() {
		fresh[k] = n.configGet(k)
	}
	defaults := map[string]string{}
	for _, k := range valkeyconf.LiveKeys() {
		defaults[k], _ = valkeyconf.LiveDefault(k)
	}
	n.must(n.B().Arbitrary(valkeyconf.SetArgs(defaults)...).Build())
	for _, k := range valkeyconf.LiveKeys() {
		if got := n.configGet(k); got != fresh[k] {
			t.Errorf("%s: the table's default %q reads back as %q; a server started without it has %q", k, defaults[k], got, fresh[k])
		}
	}

	changed := map[string]string{"maxmemory": "64mb", "maxmemory-policy": "allkeys-lru"}
	n.must(n.B().Arbitrary(valkeyconf.SetArgs(changed)...).Build())
	if got := n.configGet("maxmemory"); got != "67108864" {
		t.Fatalf("maxmemory after CONFIG SET 64mb: %q", got)
	}
	refused := map[string]string{"maxmemory": "32mb", "maxmemory-policy": "no-such-policy"}
	if err := n.do(n.B().Arbitrary(valkeyconf.SetArgs(refused)...).Build()).Error(); err == nil {
		t.Fatal("the server accepted maxmemory-policy no-such-policy")
	}
	if got := n.configGet("maxmemory"); got != "67108864" {
		t.Errorf("maxmemory after a refused CONFIG SET: %q, want it unchanged (67108864)", got)
	}
	if got := n.configGet("maxmemory-policy"); got != "allkeys-lru" {
		t.Errorf("maxmemory-policy after a refused CONFIG SET: %q, want allkeys-lru", got)
	}
}

// TestDirectivesOfTheServer checks the recorded config names of the server's release line
// (internal/valkeyconf/directives) against CONFIG GET * of the server at hand.
func TestDirectivesOfTheServer(t *testing.T) {
	conf, err := valkeyconf.Render(valkeyconf.Params{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	n := startNode(t, conf, t.TempDir())
	v, ok := valkeyconf.ParseVersion(n.info("server")["valkey_version"])
	if !ok {
		t.Skip("not a Valkey server: no recorded directives")
	}
	recorded := valkeyconf.Directives(v)
	if recorded == nil {
		t.Skipf("no directives recorded for Valkey %s", v)
	}
	kv, err := n.must(n.B().ConfigGet().Parameter("*").Build()).AsStrMap()
	if err != nil {
		t.Fatal(err)
	}
	for k := range kv {
		if !recorded[k] {
			t.Errorf("Valkey %s reports %s, not recorded in directives/%d.%d.txt", v, k, v.Major, v.Minor)
		}
	}
	for k := range recorded {
		if _, ok := kv[k]; !ok {
			t.Errorf("directives/%d.%d.txt records %s, which Valkey %s does not report", v.Major, v.Minor, k, v)
		}
	}
}
