package valkeyconf

import (
	"reflect"
	"testing"
)

func TestImageVersion(t *testing.T) {
	for image, want := range map[string]string{
		"valkey/valkey:8.1.8":               "8.1.8",
		"valkey/valkey:9.1":                 "9.1",
		"valkey/valkey:8.1.8-alpine":        "8.1.8",
		"registry:5000/valkey:v9.0.1":       "9.0.1",
		"valkey/valkey:9.1.2@sha256:abcdef": "9.1.2",
		"valkey.local/valkey:dev":           "",
		"valkey/valkey":                     "",
		"registry:5000/valkey":              "",
		"valkey/valkey@sha256:abcdef":       "",
		"valkey/valkey:latest":              "",
		// A major alone, read from the start of the tag only: an Alpine release in the
		// tag's suffix is no Valkey version.
		"valkey/valkey:8":               "8",
		"valkey/valkey:8-alpine":        "8",
		"valkey/valkey:v9":              "9",
		"valkey/valkey:9-alpine3.21":    "9",
		"valkey/valkey:8.1-alpine3.21":  "8.1",
		"valkey/valkey:8@sha256:abcdef": "8",
		"registry:5000/valkey:10":       "10",
		"valkey/valkey:alpine3.21":      "",
		"valkey/valkey:unstable-9.1":    "",
		"valkey/valkey:8.1.8.1":         "",
		"valkey/valkey:8.x":             "",
	} {
		v, ok := ImageVersion(image)
		got := ""
		if ok {
			got = v.String()
		}
		if got != want {
			t.Errorf("ImageVersion(%q) = %q, want %q", image, got, want)
		}
	}
	if v, _ := ImageVersion("valkey/valkey:8-alpine"); v.Minor != -1 || v.Patch != -1 {
		t.Errorf("a major alone has no minor: %#v", v)
	}
	if v, ok := ParseVersion("9.1.2"); !ok || v != (Version{9, 1, 2}) {
		t.Errorf("ParseVersion(9.1.2) = %v, %v", v, ok)
	}
	if _, ok := ParseVersion("redis 7.0.15"); ok {
		t.Error("a Redis version parsed as Valkey's")
	}
}

func TestNewerDirectives(t *testing.T) {
	config := map[string]string{"tls-auto-reload-interval": "60", "maxmemory": "1gb", "hash-seed": "x", "no-such-key": "1"}
	if got := NewerDirectives(Version{8, 1, 8}, config); !reflect.DeepEqual(got, []string{"hash-seed", "tls-auto-reload-interval"}) {
		t.Errorf("8.1: %v", got)
	}
	if got := NewerDirectives(Version{9, 1, -1}, config); got != nil {
		t.Errorf("9.1 knows them: %v", got)
	}
	if got := NewerDirectives(Version{7, 2, 0}, config); got != nil {
		t.Errorf("no table for 7.2, nothing can be said: %v", got)
	}
}
