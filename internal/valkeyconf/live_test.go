package valkeyconf

import (
	"reflect"
	"strings"
	"testing"
)

func TestLiveSplitsTheConfig(t *testing.T) {
	config := map[string]string{"MaxMemory": "1gb", "maxclients": "500", "notify-keyspace-events": "Ex", "maxmemory-policy": "allkeys-lru"}
	live := Live(config)
	if live["maxmemory"] != "1gb" || live["notify-keyspace-events"] != "Ex" || live["hz"] != "10" {
		t.Errorf("Live: %v", live)
	}
	if _, ok := live["maxclients"]; ok {
		t.Error("maxclients is not live: its ceiling is the pod's file limit")
	}
	if got := WithoutLive(config); !reflect.DeepEqual(got, map[string]string{"maxclients": "500"}) {
		t.Errorf("WithoutLive: %v", got)
	}
	if got := Named(config); got != "maxmemory=1gb, maxmemory-policy=allkeys-lru, notify-keyspace-events=Ex" {
		t.Errorf("Named: %q", got)
	}
	if Fingerprint(live) == Fingerprint(Live(nil)) {
		t.Error("the fingerprint does not follow a changed value")
	}
	if Fingerprint(Live(map[string]string{"maxmemory": "0"})) != Fingerprint(Live(nil)) {
		t.Error("a key set to its default is not the same as the key left out")
	}
	args := SetArgs(live)
	if len(args) != 2+2*len(LiveKeys()) || args[0] != "CONFIG" || args[1] != "SET" {
		t.Errorf("SetArgs: %v", args)
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
