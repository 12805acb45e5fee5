package workloadcontroller

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// Paths and ports the operator owns inside the pod.
const (
	// DataDir is where the node's volume (or emptyDir) is mounted: RDB, AOF and nodes.conf.
	DataDir = "/data"
	// ConfigDir is where the node's ConfigMap is mounted read-only.
	ConfigDir = "/etc/valkey"
	// ConfigFile is the key of valkey.conf in the node's ConfigMap.
	ConfigFile = "valkey.conf"
	// ClientPort is the port clients and the topology controller connect to.
	ClientPort = 6379
	// BusPort is the cluster bus port.
	BusPort = 16379
)

// defaultSavePoints are the RDB save rules used with persistence when none are given.
var defaultSavePoints = []string{"3600 1", "300 100", "60 10000"}

// ConfigError names the user config key (or spec field) that cannot be rendered, and why.
type ConfigError struct {
	Key    string
	Reason string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("config key %q refused: %s", e.Key, e.Reason)
}

// ownedKeys are valkey.conf directives the operator sets (or forbids) itself; spec.config
// may not name them. The value says where the setting comes from instead.
var ownedKeys = map[string]string{
	"dir":                        "the data directory is " + DataDir,
	"dbfilename":                 "the RDB file name is owned by the operator",
	"appendfilename":             "the AOF file name is owned by the operator",
	"appenddirname":              "the AOF directory is owned by the operator",
	"cluster-enabled":            "cluster mode is always on",
	"cluster-config-file":        "nodes.conf lives in " + DataDir,
	"cluster-port":               "the cluster bus port is owned by the operator",
	"cluster-preferred-endpoint-type": "the topology controller relies on IP endpoints",
	"port":                       "the client port is owned by the operator",
	"tls-port":                   "ports are owned by the operator",
	"bind":                       "the listen addresses are owned by the operator",
	"bind-source-addr":           "the source address is owned by the operator",
	"requirepass":                "the password comes from spec.passwordSecret",
	"masterauth":                 "the password comes from spec.passwordSecret",
	"primaryauth":                "the password comes from spec.passwordSecret",
	"masteruser":                 "the replication user is owned by the operator",
	"primaryuser":                "the replication user is owned by the operator",
	"user":                       "ACL users are owned by the operator (password from spec.passwordSecret)",
	"aclfile":                    "ACL files are not supported",
	"include":                    "includes are not supported",
	"loadmodule":                 "modules are not supported",
	"daemonize":                  "the server runs in the foreground",
	"pidfile":                    "the pid file is owned by the operator",
	"logfile":                    "the server logs to stdout",
	"protected-mode":             "the password protects the server",
	"replicaof":                  "replication is managed by the topology controller",
	"slaveof":                    "replication is managed by the topology controller",
	"rename-command":             "commands cannot be renamed",
	"enable-debug-command":       "the DEBUG command stays disabled",
	"enable-module-command":      "the MODULE command stays disabled",
	"enable-protected-configs":   "protected configs (dir...) cannot be changed at runtime",
	"save":                       "set spec.persistence.rdb instead",
	"appendonly":                 "set spec.persistence.aof.enabled instead",
	"appendfsync":                "set spec.persistence.aof.fsync instead",
	"shutdown-on-sigterm":        "the server saves on SIGTERM with persistence",
	"shutdown-on-sigint":         "the server saves on shutdown with persistence",
}

// ownedPrefixes are families of owned directives (announce settings, unix sockets).
var ownedPrefixes = map[string]string{
	"cluster-announce-": "announce settings are owned by the operator (the pod IP)",
	"replica-announce-": "announce settings are owned by the operator (the pod IP)",
	"slave-announce-":   "announce settings are owned by the operator (the pod IP)",
	"unixsocket":        "unix sockets are not supported",
}

// ownedReason returns why key (normalised) is owned, or "" when users may set it.
func ownedReason(key string) string {
	if r, ok := ownedKeys[key]; ok {
		return r
	}
	for p, r := range ownedPrefixes {
		if strings.HasPrefix(key, p) {
			return r
		}
	}
	return ""
}

var (
	keyPattern       = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)
	savePointPattern = regexp.MustCompile(`^[0-9]+ [0-9]+$`)
)

// directive is one valkey.conf line: a key and one argument.
type directive struct{ key, value string }

// renderConfig renders the node's valkey.conf. It refuses (with a *ConfigError) any user key
// the operator owns, any key that is not a plain directive name, and any value with a
// control character, so that no user input can add a directive or override an owned one.
func renderConfig(spec *valkeyv1.ValkeyNodeSpec) (string, error) {
	return render(spec, DataDir)
}

func render(spec *valkeyv1.ValkeyNodeSpec, dataDir string) (string, error) {
	user, err := userDirectives(spec.Config)
	if err != nil {
		return "", err
	}
	owned, err := ownedDirectives(spec.Persistence, dataDir)
	if err != nil {
		return "", err
	}
	defaults := []directive{
		// A backlog that covers a replica's restart lets it resync partially.
		{"repl-backlog-size", "64mb"},
	}

	var b strings.Builder
	b.WriteString("# valkey.conf rendered by the valkey operator from the ValkeyNode spec. Do not edit.\n")
	b.WriteString("# Operator-owned settings:\n")
	for _, d := range owned {
		writeDirective(&b, d)
	}
	overridden := map[string]bool{}
	for _, d := range user {
		overridden[d.key] = true
	}
	b.WriteString("# Defaults (spec.config may override them):\n")
	for _, d := range defaults {
		if !overridden[d.key] {
			writeDirective(&b, d)
		}
	}
	if len(user) > 0 {
		b.WriteString("# spec.config:\n")
	}
	for _, d := range user {
		writeDirective(&b, d)
	}
	return b.String(), nil
}

// userDirectives validates and normalises spec.config, sorted by key.
func userDirectives(config map[string]string) ([]directive, error) {
	keys := make([]string, 0, len(config))
	for k := range config {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	seen := map[string]string{}
	out := make([]directive, 0, len(keys))
	for _, k := range keys {
		v := config[k]
		norm := strings.ToLower(k)
		switch {
		case k == "":
			return nil, &ConfigError{Key: k, Reason: "empty key"}
		case !keyPattern.MatchString(norm):
			return nil, &ConfigError{Key: k, Reason: "a key is a directive name made of letters, digits and dashes"}
		case seen[norm] != "":
			return nil, &ConfigError{Key: k, Reason: fmt.Sprintf("same directive as %q (keys are case-insensitive)", seen[norm])}
		}
		if r := ownedReason(norm); r != "" {
			return nil, &ConfigError{Key: k, Reason: "owned by the operator: " + r}
		}
		if bad := unsafeValue(v); bad != "" {
			return nil, &ConfigError{Key: k, Reason: "the value " + bad}
		}
		seen[norm] = k
		out = append(out, directive{key: norm, value: v})
	}
	return out, nil
}

// unsafeValue says why a value cannot be rendered, or "" when it can.
func unsafeValue(v string) string {
	if !utf8.ValidString(v) {
		return "is not valid UTF-8"
	}
	for _, r := range v {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return fmt.Sprintf("contains the control character %U (newlines and control characters are refused)", r)
		}
	}
	return ""
}

// ownedDirectives are the settings the operator always renders, persistence included.
func ownedDirectives(p *valkeyv1.PersistenceSpec, dataDir string) ([]directive, error) {
	d := []directive{
		{"port", fmt.Sprint(ClientPort)},
		{"bind", "* -::*"},
		{"protected-mode", "no"},
		{"daemonize", "no"},
		{"logfile", ""},
		{"cluster-enabled", "yes"},
		{"cluster-port", fmt.Sprint(BusPort)},
		{"cluster-config-file", dataDir + "/nodes.conf"},
		{"dir", dataDir},
		{"dbfilename", "dump.rdb"},
		{"appenddirname", "appendonlydir"},
		{"appendfilename", "appendonly.aof"},
		{"enable-protected-configs", "no"},
		{"enable-debug-command", "no"},
		{"enable-module-command", "no"},
	}
	save, shutdown := "", "default"
	if p.RDBEnabled() {
		points := defaultSavePoints
		if p.RDB != nil && len(p.RDB.SavePoints) > 0 {
			points = p.RDB.SavePoints
		}
		for _, sp := range points {
			if !savePointPattern.MatchString(sp) {
				return nil, &ConfigError{Key: "persistence.rdb.savePoints", Reason: fmt.Sprintf("%q is not \"<seconds> <changes>\"", sp)}
			}
		}
		save = strings.Join(points, " ")
		// Snapshot on SIGTERM so that a restarted replica reloads its replication ID and
		// offset and resyncs partially.
		shutdown = "save"
	}
	d = append(d, directive{"save", save}, directive{"shutdown-on-sigterm", shutdown})
	if p.AOFEnabled() {
		fsync := string(p.AOF.Fsync)
		if fsync == "" {
			fsync = "everysec"
		}
		switch fsync {
		case "always", "everysec", "no":
		default:
			return nil, &ConfigError{Key: "persistence.aof.fsync", Reason: fmt.Sprintf("%q is not always, everysec or no", fsync)}
		}
		d = append(d, directive{"appendonly", "yes"}, directive{"appendfsync", fsync})
	} else {
		d = append(d, directive{"appendonly", "no"})
	}
	return d, nil
}

// writeDirective writes one line: the key and its value as a single double-quoted argument.
// Inside double quotes valkey's parser only gives meaning to backslash escapes and the
// closing quote, so escaping both keeps any value one argument of one line (control
// characters never reach here).
func writeDirective(b *strings.Builder, d directive) {
	b.WriteString(d.key)
	b.WriteString(` "`)
	for _, r := range d.value {
		if r == '\\' || r == '"' {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	b.WriteString("\"\n")
}
