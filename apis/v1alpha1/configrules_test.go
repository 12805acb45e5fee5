package v1alpha1_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/valkeyconf"
)

// spec.config's admission rules, as the suite's kube-apiserver applies them to a dry-run
// create, refuse exactly the configs the workload controller refuses to render
// (valkeyconf.CheckConfig): every key it owns, in any case, and every family of keys it
// owns; every directive of the release lines it knows (admitted); two spellings of one key;
// every control character in a value; maxclients below its floor and at its edges; keys
// that are not directive names. A refusal names the key. The API server checked the CRDs
// of deploy/crd when the suite installed them, the cost of their CEL rules included: it
// refuses a CRD whose rules it cannot afford.
var _ = Describe("spec.config admission", func() {
	It("refuses exactly the configs the workload controller refuses to render, on a ValkeyCluster and a ValkeyNode, naming the key", func() {
		ns := newNamespace()
		corpus := configCorpus()
		By(fmt.Sprintf("dry-run creates of %d spec.configs, each on a ValkeyCluster and a ValkeyNode", len(corpus)))
		var (
			mu                sync.Mutex
			mismatches        []string
			refused, admitted int
		)
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(8)
		for _, tc := range corpus {
			goErr := valkeyconf.CheckConfig(tc)
			for _, obj := range []client.Object{configCluster(ns, tc), configNode(ns, tc)} {
				g.Go(func() error {
					err := k8s.Create(gctx, obj, client.DryRunAll)
					if err != nil && !apierrors.IsInvalid(err) {
						return fmt.Errorf("%T %q: not an admission refusal: %w", obj, tc, err)
					}
					mismatch := judgeAlike(tc, goErr, err)
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						refused++
					} else {
						admitted++
					}
					if mismatch != "" {
						mismatches = append(mismatches, fmt.Sprintf("%T %q: %s", obj, tc, mismatch))
					}
					return nil
				})
			}
		}
		Expect(g.Wait()).To(Succeed())
		sort.Strings(mismatches)
		Expect(mismatches).To(BeEmpty(), "admission and valkeyconf.CheckConfig judge these configs differently")
		Expect(refused + admitted).To(Equal(2 * len(corpus)))
		Expect(refused).To(BeNumerically(">", len(corpus)/2), "the corpus holds refused configs")
		Expect(admitted).To(BeNumerically(">", len(corpus)/2), "the corpus holds admitted configs")
	})
})

// judgeAlike says how the API server's verdict (admissionErr, nil when admitted) differs
// from valkeyconf's (goErr), or "" when they agree and a refusal names the key.
func judgeAlike(config map[string]string, goErr, admissionErr error) string {
	switch {
	case goErr == nil && admissionErr != nil:
		return fmt.Sprintf("admission refuses what the workload renders: %v", admissionErr)
	case goErr != nil && admissionErr == nil:
		return fmt.Sprintf("admission accepts what the workload refuses: %v", goErr)
	case goErr != nil:
		var ce *valkeyconf.ConfigError
		if !errors.As(goErr, &ce) {
			return fmt.Sprintf("not a ConfigError: %v", goErr)
		}
		if msg := admissionErr.Error(); !namesKey(msg, ce.Key, config) {
			return fmt.Sprintf("the refusal does not name the key %q: %s", ce.Key, msg)
		}
	}
	return ""
}

// configCluster is a ValkeyCluster with the given spec.config, valid otherwise.
func configCluster(ns string, config map[string]string) *valkeyv1.ValkeyCluster {
	c := persistentCluster(ns)
	c.Name = "config"
	c.Spec.Config = config
	return c
}

// configNode is a ValkeyNode of a cluster with the given spec.config, valid otherwise.
func configNode(ns string, config map[string]string) *valkeyv1.ValkeyNode {
	c := persistentCluster(ns)
	n := &valkeyv1.ValkeyNode{
		Spec: valkeyv1.ValkeyNodeSpec{ClusterName: "config", Shard: 1, ReplicaIndex: 0, ServerSpec: c.Spec.ServerSpec},
	}
	n.Name, n.Namespace = valkeyv1.NodeName("config", 1, 0), ns
	n.Spec.Config = config
	return n
}

// TestConfigRulesDocumented checks that docs/configuration.md lists every key and family
// of keys spec.config may not name.
func TestConfigRulesDocumented(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, owned := range []map[string]string{valkeyconf.OwnedKeys(), valkeyconf.OwnedPrefixes()} {
		for k := range owned {
			if !strings.Contains(string(b), "`"+k+"`") {
				t.Errorf("docs/configuration.md does not list `%s`", k)
			}
		}
	}
}

// namesKey tells whether an admission refusal names key, quoted or as the field
// (spec.config.<key>), or, for two spellings of one directive, any key spelt twice (the
// two judges may find another pair first). A key with a newline cannot be named in a
// message of one line.
func namesKey(msg, key string, config map[string]string) bool {
	if strings.Contains(key, "\n") {
		return true
	}
	spelledTwice := func(k string) bool {
		for j := range config {
			if j != k && strings.EqualFold(j, k) {
				return true
			}
		}
		return false
	}
	for k := range config {
		named := strings.Contains(msg, `"`+k+`"`) || strings.Contains(msg, "spec.config."+k+":")
		if named && (strings.EqualFold(k, key) || spelledTwice(key) && spelledTwice(k)) {
			return true
		}
	}
	return false
}

// configCorpus are the spec.configs both must judge alike.
func configCorpus() []map[string]string {
	one := func(k, v string) map[string]string { return map[string]string{k: v} }
	out := []map[string]string{
		{}, {"maxmemory": "1gb", "MaxMemory-Policy": "allkeys-lru"}, one("notify-keyspace-events", "Ex"),
		one("maxmemory-policy", "é中 ok"), one("maxmemory-policy", "a\u00a0b"), one("maxmemory-policy", strings.Repeat("x", 4096)), one("maxmemory-policy", strings.Repeat("é", 4096)),
		one("maxmemory-policy", strings.Repeat("x", 4097)), one("maxmemory-policy", ""), one("maxmemory-policy", `"quoted" \ back`),
		// keys that are not directive names
		one("", "1"), one("-x", "1"), one("a_b", "1"), one("max memory", "1"), one("maxmemory\nbind", "1"),
		one("tcp-\u212aeepalive", "1"), one("ma\u0130xmemory", "1"),
		// two spellings of one key, and keys of the same length that differ
		{"Maxmemory": "1", "maxmemory": "2"}, {"MAXMEMORY": "1", "maxMemory": "2"},
		{"A1": "x", "a1": "y", "B2": "x", "b2": "y"}, {"hz": "10", "HZ": "10"}, {"hz": "10", "ab": "1", "AC": "1"},
		// families the operator owns, and names beside them
		one("cluster-announce", "1"), one("unixsocketperm", "700"), one("UnixSocket", "/tmp/s"),
		one("replica-announced", "yes"), one("replica-announce-ip", "1.2.3.4"), one("Slave-Announce-Port", "1"),
		one("cluster-announce-hostname", "x"), one("cluster-announce-human-nodename", "x"),
	}
	for _, v := range []string{"63", "0", "-64", "abc", "", "1e3", "64.0", "0064", "64", "+64", " 10000 ", "000000000000000000064",
		"999999999999999999", "9999999999999999999", "64\u00a0", "\u200a64"} {
		out = append(out, one("maxclients", v), one("MaxClients", v))
	}
	for r := rune(0); r < 0xa1; r++ {
		if r < 0x20 || r >= 0x7f {
			out = append(out, one("maxmemory-policy", "a"+string(r)+"b"))
		}
	}
	for k := range valkeyconf.OwnedKeys() {
		out = append(out, one(k, "x"), one(strings.ToUpper(k), "x"), one(strings.ToUpper(k[:1])+k[1:], "x"))
	}
	for p := range valkeyconf.OwnedPrefixes() {
		out = append(out, one(p+"x", "1"), one(strings.ToUpper(p)+"X", "1"), one(strings.TrimSuffix(p, "-"), "1"))
	}
	recorded := map[string]bool{}
	for _, line := range []valkeyconf.Version{{Major: 8, Minor: 1, Patch: -1}, {Major: 9, Minor: 1, Patch: -1}} {
		for name := range valkeyconf.Directives(line) {
			recorded[name] = true
		}
	}
	names := make([]string, 0, len(recorded))
	for name := range recorded {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		out = append(out, one(name, "100"))
	}
	many := map[string]string{}
	for _, name := range names[:200] {
		if valkeyconf.CheckConfig(one(name, "100")) == nil {
			many[name] = "100"
		}
	}
	return append(out, many)
}
