package valkeyconf

import (
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"
)

// liveDefaults are the keys a cluster node takes without a restart (CONFIG SET), each with
// the value a server has when spec.config does not name it. A key is here only when every
// supported server (Valkey 8.1 and 9.1) applies it at runtime and has that same default, so
// that adding, changing and removing it are all applied live: a removed key is set back to
// its default. Other keys of spec.config (maxclients, whose ceiling is the pod's file
// limit; the lazyfree and encoding settings, whose defaults differ between versions) roll
// the pods as before. A default the operator renders itself (Render's defaults:
// cluster-node-timeout) is the default here too, and is set on servers spec.config does not
// name it for (WantedLive), so that a new operator default reaches running servers without
// a restart.
// internal/valkeyconf/realserver checks the table against the server.
var liveDefaults = map[string]string{
	"maxmemory":                     "0",
	"maxmemory-policy":              "noeviction",
	"maxmemory-samples":             "5",
	"timeout":                       "0",
	"tcp-keepalive":                 "300",
	"slowlog-log-slower-than":       "10000",
	"slowlog-max-len":               "128",
	"latency-monitor-threshold":     "0",
	"notify-keyspace-events":        "",
	"hz":                            "10",
	"active-expire-effort":          "1",
	"busy-reply-threshold":          "5000",
	"loglevel":                      "notice",
	"repl-timeout":                  "60",
	"min-replicas-to-write":         "0",
	"min-replicas-max-lag":          "10",
	"cluster-require-full-coverage": "yes",
	"cluster-allow-reads-when-down": "no",
	"cluster-node-timeout":          DefaultNodeTimeout,
}

// LiveKeys are the keys applied without a restart, sorted.
func LiveKeys() []string { return sortedKeys(liveDefaults) }

// LiveDefault is the value a server has for a live key spec.config does not name, and
// whether key is live at all.
func LiveDefault(key string) (string, bool) {
	v, ok := liveDefaults[strings.ToLower(key)]
	return v, ok
}

// IsLive tells whether a spec.config key is applied without a restart.
func IsLive(key string) bool {
	_, ok := LiveDefault(key)
	return ok
}

// WithoutLive is config without its live keys: what, when it changes, needs a restart.
func WithoutLive(config map[string]string) map[string]string {
	out := make(map[string]string, len(config))
	for k, v := range config {
		if !IsLive(k) {
			out[k] = v
		}
	}
	return out
}

// Named lists config's live keys as key=value, sorted by key ("" when it names none).
func Named(config map[string]string) string {
	values := NamedLive(config)
	parts := make([]string, 0, len(values))
	for _, k := range sortedKeys(values) {
		parts = append(parts, k+"="+values[k])
	}
	return strings.Join(parts, ", ")
}

// NamedLive is config's live keys (lower-case) and their values.
func NamedLive(config map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range config {
		if IsLive(k) {
			out[strings.ToLower(k)] = v
		}
	}
	return out
}

// WantedLive is what a cluster server should run of the live keys: spec.config's (NamedLive)
// and the operator's own rendered defaults (renderedDefaults) spec.config does not name.
func WantedLive(config map[string]string) map[string]string {
	out := NamedLive(config)
	for _, d := range renderedDefaults {
		if _, named := out[d.Key]; IsLive(d.Key) && !named {
			out[d.Key] = d.Args[0]
		}
	}
	return out
}

// SetArgs are the arguments of one CONFIG SET of every key of values (sorted by key): the
// server applies all of them or none. Nil when values is empty.
func SetArgs(values map[string]string) []string {
	if len(values) == 0 {
		return nil
	}
	args := []string{"CONFIG", "SET"}
	for _, k := range sortedKeys(values) {
		args = append(args, k, values[k])
	}
	return args
}

// Fingerprint is a short hash of live values (to tell whether a server has them).
func Fingerprint(values map[string]string) uint64 {
	h := fnv.New64a()
	for _, k := range sortedKeys(values) {
		_, _ = fmt.Fprintf(h, "%s=%q\n", k, values[k])
	}
	return h.Sum64()
}

func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }

// RestartPart is a rendered valkey.conf without its comments and its live keys' lines:
// two configs with the same RestartPart differ only in what CONFIG SET applies.
func RestartPart(conf string) string {
	var b strings.Builder
	for _, line := range strings.Split(conf, "\n") {
		key, _, _ := strings.Cut(line, " ")
		if line == "" || strings.HasPrefix(line, "#") || IsLive(key) {
			continue
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String()
}
