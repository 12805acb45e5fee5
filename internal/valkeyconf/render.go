// Package valkeyconf renders valkey.conf for a ValkeyNode: the operator's own settings, the
// persistence settings, and the user's keys, with nothing a user writes able to add a
// directive or override an owned one. It depends on the standard library only, so that its
// fuzz target builds fast (the tests that load rendered configs into a real server are in
// realserver/ for the same reason).
package valkeyconf

import (
	"fmt"
	"maps"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Ports the rendered config listens on.
const (
	ClientPort = 6379
	BusPort    = 16379
	// MetricsPort is where valkey-start serves /metrics (the volume's usage and the
	// server's persistence state); the server itself does not listen there.
	MetricsPort = 9121
)

// Paths of the kubelet's probes, which valkey-start answers on MetricsPort over a connection
// it keeps to the server: a probe costs the kubelet an HTTP request instead of a process
// started in the container, and is answered within milliseconds of the server answering.
const (
	// ReadyPath answers 200 when the server replies PONG to PING: not loading, the password
	// accepted (the startup and readiness probes).
	ReadyPath = "/readyz"
	// AlivePath answers 200 when the server replies at all, an error reply such as -BUSY or
	// -LOADING included: its event loop runs (the liveness probe).
	AlivePath = "/livez"
)

// DefaultNodeTimeout is the cluster-node-timeout (milliseconds) the operator renders when
// spec.config does not name one: how long a node may not answer before its peers fail it
// over. Chosen by measurement (docs/operations.md, "Failover timing"): a stopped primary's
// replica is promoted a few seconds later, and the e2e writer at full CPU on two cores
// causes no failover. Valkey's own default is 15000.
const DefaultNodeTimeout = "5000"

// DefaultSavePoints are the RDB save rules used with persistence when none are given.
var DefaultSavePoints = []string{"3600 1", "300 100", "60 10000"}

// Params is what the config is rendered from.
type Params struct {
	// DataDir holds RDB, AOF and nodes.conf (/data in the pod).
	DataDir string
	// Persistence is on: RDB and/or AOF as below. Off: no RDB, no AOF.
	Persistence bool
	// RDB snapshots (with persistence), with SavePoints ("<seconds> <changes>") or the
	// defaults.
	RDB        bool
	SavePoints []string
	// AOF (with persistence) with its appendfsync policy (default everysec).
	AOF   bool
	Fsync string
	// Config is the user's spec.config.
	Config map[string]string
	// AuthFile, when set, is included last among the owned settings: the file valkey-start
	// writes the password into at start (requirepass, masterauth), so that the password is
	// neither in this config nor on the server's command line.
	AuthFile string
	// AnnounceHostname, when set, is the name the node announces to clients
	// (cluster-announce-hostname) and prefers in redirects and CLUSTER SLOTS/SHARDS
	// (cluster-preferred-endpoint-type hostname): its pod's DNS name.
	AnnounceHostname string
	// TLS, when set, serves clients, replication and the cluster bus over TLS.
	TLS *TLS
	// OmitLiveDefaults leaves out the defaults a running server takes with CONFIG SET
	// (cluster-node-timeout): what decides a restart, which a new live default must not.
	OmitLiveDefaults bool
}

// TLS is where the server's certificate files are, and the plaintext port kept, if any.
type TLS struct {
	// Dir holds tls.crt, tls.key and ca.crt (the certificate Secret's volume).
	Dir string
	// PlaintextPort also serves plaintext clients (0: none).
	PlaintextPort int32
}

// ConfigError names the user config key (or spec field) that cannot be rendered, and why.
type ConfigError struct {
	Key    string
	Reason string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("config key %q refused: %s", e.Key, e.Reason)
}

// ownedKeys are directives the operator sets (or forbids) itself; spec.config may not name
// them. The value says why. Admission refuses the same keys (the rules of spec.config in
// apis/v1alpha1): a spec of apis/v1alpha1 (configrules_test.go) checks, with dry-run
// creates on envtest's API server, that its rules and Render refuse the same configs.
var ownedKeys = map[string]string{
	"dir":                             "the data directory is owned by the operator (/data)",
	"dbfilename":                      "the RDB file name is owned by the operator",
	"appendfilename":                  "the AOF file name is owned by the operator",
	"appenddirname":                   "the AOF directory is owned by the operator",
	"cluster-enabled":                 "cluster mode is always on",
	"cluster-config-file":             "nodes.conf lives in the data directory",
	"cluster-port":                    "the cluster bus port is owned by the operator",
	"cluster-preferred-endpoint-type": "the topology controller relies on IP endpoints",
	"port":                            "the client port is owned by the operator",
	"tls-port":                        "ports are owned by the operator",
	"tls-cert-file":                   "the certificate comes from spec.tls",
	"tls-key-file":                    "the certificate comes from spec.tls",
	"tls-ca-cert-file":                "the certificate comes from spec.tls",
	"tls-ca-cert-dir":                 "the certificate comes from spec.tls",
	"tls-client-cert-file":            "the certificate comes from spec.tls",
	"tls-client-key-file":             "the certificate comes from spec.tls",
	"tls-replication":                 "TLS on replication follows spec.tls",
	"tls-auth-clients":                "client certificates follow spec.tls",
	"tls-cluster":                     "TLS on the cluster bus follows spec.tls",
	"bind":                            "the listen addresses are owned by the operator",
	"bind-source-addr":                "the source address is owned by the operator",
	"requirepass":                     "the password comes from spec.passwordSecret",
	"masterauth":                      "the password comes from spec.passwordSecret",
	"primaryauth":                     "the password comes from spec.passwordSecret",
	"masteruser":                      "the replication user is owned by the operator",
	"primaryuser":                     "the replication user is owned by the operator",
	"user":                            "ACL users are owned by the operator (the password comes from spec.passwordSecret)",
	"aclfile":                         "ACL files are not supported",
	"include":                         "includes are not supported",
	"loadmodule":                      "modules are not supported",
	"daemonize":                       "the server runs in the foreground",
	"pidfile":                         "the pid file is owned by the operator",
	"logfile":                         "the server logs to stdout",
	"protected-mode":                  "the password protects the server",
	"replicaof":                       "replication is managed by the topology controller",
	"slaveof":                         "replication is managed by the topology controller",
	"rename-command":                  "commands cannot be renamed",
	"enable-debug-command":            "the DEBUG command stays disabled",
	"enable-module-command":           "the MODULE command stays disabled",
	"enable-protected-configs":        "protected configs (dir...) cannot be changed at runtime",
	"save":                            "set spec.persistence.rdb instead",
	"appendonly":                      "set spec.persistence.aof.enabled instead",
	"appendfsync":                     "set spec.persistence.aof.fsync instead",
	"shutdown-on-sigterm":             "the server saves on SIGTERM with persistence",
	"shutdown-on-sigint":              "the server saves on shutdown with persistence",
}

// ownedPrefixes are families of owned directives (announce settings, unix sockets).
var ownedPrefixes = map[string]string{
	"cluster-announce-": "announce settings are owned by the operator (the pod IP)",
	"replica-announce-": "announce settings are owned by the operator (the pod IP)",
	"slave-announce-":   "announce settings are owned by the operator (the pod IP)",
	"unixsocket":        "unix sockets are not supported",
}

// Owned tells why a (lower-case) key is owned by the operator, "" when users may set it.
func Owned(key string) string {
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

// OwnedKeys are the keys spec.config may not name (lower-case), each with why.
func OwnedKeys() map[string]string { return maps.Clone(ownedKeys) }

// OwnedPrefixes are the families of keys spec.config may not name, each with why.
func OwnedPrefixes() map[string]string { return maps.Clone(ownedPrefixes) }

// CheckConfig refuses what Render refuses of spec.config (a *ConfigError naming the key),
// nil when it can be rendered.
func CheckConfig(config map[string]string) error {
	_, err := userDirectives(config)
	return err
}

var (
	// keyPattern is a directive name, in ASCII (admission's rule is the same): a key that
	// only lower-cases into one, such as one with the Kelvin sign for K, is refused.
	keyPattern       = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]*$`)
	savePointPattern = regexp.MustCompile(`^[0-9]+ [0-9]+$`)
	// clientsPattern is a maxclients admission can compare (an int64 in CEL).
	clientsPattern = regexp.MustCompile(`^\+?[0-9]{1,18}$`)
)

// Directive is one valkey.conf line: a lower-case key and its arguments.
type Directive struct {
	Key  string
	Args []string
}

// renderedDefaults are the settings Render writes unless spec.config names them; the live
// ones among them are also set on running servers (WantedLive).
var renderedDefaults = []Directive{
	// A backlog that covers a replica's restart lets it resync partially.
	{"repl-backlog-size", []string{"64mb"}},
	// A shard's replicas are few and attach one at a time: a full sync starts at
	// once instead of waiting 5 s for more replicas to share it.
	{"repl-diskless-sync-delay", []string{"0"}},
	// Failover after a few seconds instead of Valkey's 15 s (DefaultNodeTimeout).
	{"cluster-node-timeout", []string{DefaultNodeTimeout}},
}

// Render renders valkey.conf. It refuses (with a *ConfigError) any user key the operator
// owns, any key that is not a plain directive name, and any value with a control
// character or invalid UTF-8.
func Render(p Params) (string, error) {
	user, err := userDirectives(p.Config)
	if err != nil {
		return "", err
	}
	owned, err := ownedDirectives(p)
	if err != nil {
		return "", err
	}
	overridden := map[string]bool{}
	for _, d := range user {
		overridden[d.Key] = true
	}

	var b strings.Builder
	b.WriteString("# valkey.conf rendered by the valkey operator from the ValkeyNode spec. Do not edit.\n")
	b.WriteString("# Operator-owned settings:\n")
	for _, d := range owned {
		write(&b, d)
	}
	b.WriteString("# Defaults (spec.config may override them):\n")
	for _, d := range renderedDefaults {
		if !overridden[d.Key] && !(p.OmitLiveDefaults && IsLive(d.Key)) {
			write(&b, d)
		}
	}
	if len(user) > 0 {
		b.WriteString("# spec.config:\n")
	}
	for _, d := range user {
		write(&b, d)
	}
	return b.String(), nil
}

// userDirectives validates and normalises spec.config, sorted by key.
func userDirectives(config map[string]string) ([]Directive, error) {
	keys := make([]string, 0, len(config))
	for k := range config {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	seen := map[string]string{}
	out := make([]Directive, 0, len(keys))
	for _, k := range keys {
		v := config[k]
		norm := strings.ToLower(k)
		switch {
		case k == "":
			return nil, &ConfigError{Key: k, Reason: "empty key"}
		case !keyPattern.MatchString(k):
			return nil, &ConfigError{Key: k, Reason: "a key is a directive name made of letters, digits and dashes"}
		case seen[norm] != "":
			return nil, &ConfigError{Key: k, Reason: fmt.Sprintf("same directive as %q (keys are case-insensitive)", seen[norm])}
		}
		if r := Owned(norm); r != "" {
			return nil, &ConfigError{Key: k, Reason: "owned by the operator: " + r}
		}
		if bad := unsafeValue(v); bad != "" {
			return nil, &ConfigError{Key: k, Reason: "the value " + bad}
		}
		if bad := lockout(norm, v); bad != "" {
			return nil, &ConfigError{Key: k, Reason: bad}
		}
		seen[norm] = k
		out = append(out, Directive{Key: norm, Args: []string{v}})
	}
	return out, nil
}

// MinClients is the least maxclients the operator accepts: the operator, valkey-start, the
// probes and the replication links each hold connections, and the cluster bus counts too.
const MinClients = 64

// maxValue bounds a value's length (admission refuses longer ones too).
const maxValue = 4096

// lockout says why a value would lock the operator out of its own servers, "" when it does not.
func lockout(key, v string) string {
	if key != "maxclients" {
		return ""
	}
	v = strings.TrimSpace(v)
	n, err := strconv.Atoi(v)
	if !clientsPattern.MatchString(v) || err != nil || n < MinClients {
		return fmt.Sprintf("maxclients %q is not a whole number of at least %d: the operator, the probes and replication need connections of their own", v, MinClients)
	}
	return ""
}

// unsafeValue says why a value cannot be rendered, "" when it can.
func unsafeValue(v string) string {
	if n := utf8.RuneCountInString(v); n > maxValue {
		return fmt.Sprintf("has %d characters, more than %d", n, maxValue)
	}
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
func ownedDirectives(p Params) ([]Directive, error) {
	one := func(k, v string) Directive { return Directive{k, []string{v}} }
	d := []Directive{
		one("port", fmt.Sprint(plaintextPort(p.TLS))),
		one("bind", "* -::*"),
		one("protected-mode", "no"),
		one("daemonize", "no"),
		one("logfile", ""),
		one("cluster-enabled", "yes"),
		one("cluster-port", fmt.Sprint(BusPort)),
		one("cluster-config-file", p.DataDir+"/nodes.conf"),
		one("dir", p.DataDir),
		one("dbfilename", "dump.rdb"),
		one("appenddirname", "appendonlydir"),
		one("appendfilename", "appendonly.aof"),
		one("enable-protected-configs", "no"),
		one("enable-debug-command", "no"),
		one("enable-module-command", "no"),
	}
	save, shutdown := "", "default"
	if p.Persistence && p.RDB {
		points := DefaultSavePoints
		if len(p.SavePoints) > 0 {
			points = p.SavePoints
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
	d = append(d, one("save", save), one("shutdown-on-sigterm", shutdown))
	if p.Persistence && p.AOF {
		fsync := p.Fsync
		if fsync == "" {
			fsync = "everysec"
		}
		switch fsync {
		case "always", "everysec", "no":
		default:
			return nil, &ConfigError{Key: "persistence.aof.fsync", Reason: fmt.Sprintf("%q is not always, everysec or no", fsync)}
		}
		d = append(d, one("appendonly", "yes"), one("appendfsync", fsync))
	} else {
		d = append(d, one("appendonly", "no"))
	}
	if p.AnnounceHostname != "" {
		d = append(d, one("cluster-announce-hostname", p.AnnounceHostname), one("cluster-preferred-endpoint-type", "hostname"))
	}
	d = append(d, tlsDirectives(p.TLS)...)
	if p.AuthFile != "" {
		d = append(d, one("include", p.AuthFile))
	}
	return d, nil
}

// plaintextPort is the port plaintext clients connect to: ClientPort without TLS; with
// TLS, the plaintext port asked for, or 0 (none).
func plaintextPort(t *TLS) int32 {
	if t == nil {
		return ClientPort
	}
	return t.PlaintextPort
}

// tlsDirectives switch the client port, replication and the cluster bus to TLS: the
// client port serves TLS, the plaintext port is off unless asked for, and clients need no
// certificate of their own.
func tlsDirectives(t *TLS) []Directive {
	if t == nil {
		return nil
	}
	one := func(k, v string) Directive { return Directive{k, []string{v}} }
	return []Directive{
		one("tls-port", fmt.Sprint(ClientPort)),
		one("tls-cert-file", t.Dir+"/tls.crt"),
		one("tls-key-file", t.Dir+"/tls.key"),
		one("tls-ca-cert-file", t.Dir+"/ca.crt"),
		one("tls-replication", "yes"),
		one("tls-cluster", "yes"),
		one("tls-auth-clients", "no"),
	}
}

// write writes one line: the key and each argument double-quoted (Quote).
func write(b *strings.Builder, d Directive) {
	b.WriteString(d.Key)
	for _, a := range d.Args {
		b.WriteByte(' ')
		b.WriteString(Quote(a))
	}
	b.WriteByte('\n')
}

// Quote is s as one double-quoted argument of a valkey.conf line. Inside double quotes
// valkey's parser gives meaning only to backslash escapes and the closing quote, so both are
// escaped, and control bytes (a newline would end the line) are written as \xHH escapes:
// any value stays one argument of one line.
func Quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' || c == '"':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
