package valkeyconf

import (
	"reflect"
	"strings"
	"testing"
)

func TestLiveSplitsTheConfig(t *testing.T) {
	config := map[string]string{"MaxMemory": "1gb", "maxclients": "500", "notify-keyspace-events": "Ex", "maxmemory-policy": "allkeys-lru"}
	if IsLive("maxclients") || !IsLive("MaxMemory") {
		t.Error("maxclients is not live (its ceiling is the pod's file limit); maxmemory is, in any case")
	}
	if d, ok := LiveDefault("hz"); !ok || d != "10" {
		t.Errorf("LiveDefault(hz) = %q, %v", d, ok)
	}
	if got := WithoutLive(config); !reflect.DeepEqual(got, map[string]string{"maxclients": "500"}) {
		t.Errorf("WithoutLive: %v", got)
	}
	if got := Named(config); got != "maxmemory=1gb, maxmemory-policy=allkeys-lru, notify-keyspace-events=Ex" {
		t.Errorf("Named: %q", got)
	}
	named := NamedLive(config)
	if Fingerprint(named) == Fingerprint(NamedLive(map[string]string{"maxmemory": "2gb"})) {
		t.Error("the fingerprint does not follow a changed value")
	}
	if !reflect.DeepEqual(named, map[string]string{"maxmemory": "1gb", "maxmemory-policy": "allkeys-lru", "notify-keyspace-events": "Ex"}) {
		t.Errorf("NamedLive: %v", named)
	}
	want := []string{"CONFIG", "SET", "maxmemory", "1gb", "maxmemory-policy", "allkeys-lru", "notify-keyspace-events", "Ex"}
	if args := SetArgs(named); !reflect.DeepEqual(args, want) {
		t.Errorf("SetArgs: %v", args)
	}
	if SetArgs(nil) != nil {
		t.Error("SetArgs of nothing is a command")
	}
}

// TestLiveDefaultsAreTheRenderedOnes: a live key the operator renders a default for has
// that default in the live table, so that removing it from spec.config sets the rendered
// value back.
func TestLiveDefaultsAreTheRenderedOnes(t *testing.T) {
	conf, err := Render(Params{DataDir: "/data"})
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(conf, "\n") {
		key, value, _ := strings.Cut(line, " ")
		if def, ok := LiveDefault(key); ok && strings.Trim(value, `"`) != def {
			t.Errorf("%s is rendered as %s but its live default is %q", key, value, def)
		}
	}
}

// TestWantedLiveAddsTheOperatorsDefaults: every cluster server is given the operator's
// rendered live defaults unless spec.config names them, and Render can leave them out.
func TestWantedLiveAddsTheOperatorsDefaults(t *testing.T) {
	if got := WantedLive(map[string]string{"maxmemory": "1gb"}); !reflect.DeepEqual(got, map[string]string{"maxmemory": "1gb", "cluster-node-timeout": DefaultNodeTimeout}) {
		t.Errorf("WantedLive without a node timeout: %v", got)
	}
	if got := WantedLive(map[string]string{"Cluster-Node-Timeout": "2000", "maxclients": "500"}); !reflect.DeepEqual(got, map[string]string{"cluster-node-timeout": "2000"}) {
		t.Errorf("WantedLive with a node timeout: %v", got)
	}
	with, err := Render(Params{DataDir: "/data"})
	if err != nil {
		t.Fatal(err)
	}
	without, err := Render(Params{DataDir: "/data", OmitLiveDefaults: true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(with, "\ncluster-node-timeout \""+DefaultNodeTimeout+"\"\n") || strings.Contains(without, "cluster-node-timeout") {
		t.Errorf("OmitLiveDefaults does not leave out cluster-node-timeout alone:\n%s\n---\n%s", with, without)
	}
	if strings.Replace(with, "cluster-node-timeout \""+DefaultNodeTimeout+"\"\n", "", 1) != without {
		t.Errorf("OmitLiveDefaults changes more than the live defaults:\n%s\n---\n%s", with, without)
	}
}
