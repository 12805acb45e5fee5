package valkeyconf

import (
	"errors"
	"strings"
	"testing"
)

func TestSplitArgsMatchesValkey(t *testing.T) {
	for _, tc := range []struct {
		line string
		want []string
		ok   bool
	}{
		{`set "a b" c`, []string{"set", "a b", "c"}, true},
		{`k "a\"b\\c"`, []string{"k", `a"b\c`}, true},
		{`k "\x41\n"`, []string{"k", "A\n"}, true},
		{`k 'it\'s'`, []string{"k", "it's"}, true},
		{`k "a"b`, nil, false},
		{`k "open`, nil, false},
		{`k ""`, []string{"k", ""}, true},
	} {
		got, ok := splitArgs(tc.line)
		if ok != tc.ok || strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("splitArgs(%q) = %q, %v; want %q, %v", tc.line, got, ok, tc.want, tc.ok)
		}
	}
}

func TestRenderUserKeys(t *testing.T) {
	want := map[string]string{
		"maxmemory":                  "1gb",
		"maxmemory-policy":           "allkeys-lru",
		"repl-backlog-size":          "256mb",
		"client-output-buffer-limit": "replica 512mb 128mb 60",
		"proc-title-template":        `{title} "quoted" \x41 'single'`,
	}
	conf, err := Render(Params{DataDir: "/data", Config: map[string]string{
		"maxmemory":                  "1gb",
		"Maxmemory-Policy":           "allkeys-lru",
		"repl-backlog-size":          "256mb",
		"client-output-buffer-limit": "replica 512mb 128mb 60",
		"proc-title-template":        `{title} "quoted" \x41 'single'`,
	}})
	if err != nil {
		t.Fatal(err)
	}
	ds, err := parse(conf)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, d := range ds {
		seen[d.Key]++
		if v, ok := want[d.Key]; ok && (len(d.Args) != 1 || d.Args[0] != v) {
			t.Errorf("%s = %q, want exactly [%q]", d.Key, d.Args, v)
		}
	}
	for k := range want {
		if seen[k] != 1 {
			t.Errorf("%s rendered %d times, want once:\n%s", k, seen[k], conf)
		}
	}
}

// TestRenderPersistence checks what each persistence choice renders, as valkey-server reads
// it: RDB, AOF and the snapshot on SIGTERM, beside the settings every node has.
func TestRenderPersistence(t *testing.T) {
	for _, tc := range []struct {
		name   string
		params Params
		want   map[string]string
		absent []string
	}{{
		name:   "no persistence: no RDB, no AOF, data dir still /data",
		params: Params{DataDir: "/data"},
		want: map[string]string{
			"dir": "/data", "cluster-config-file": "/data/nodes.conf", "cluster-enabled": "yes",
			"save": "", "appendonly": "no", "shutdown-on-sigterm": "default", "port": "6379",
			"cluster-port": "16379", "protected-mode": "no", "bind": "* -::*", "repl-backlog-size": "64mb",
			"repl-diskless-sync-delay": "0",
		},
		absent: []string{"appendfsync"},
	}, {
		name:   "persistence: RDB with default save points, saves on SIGTERM",
		params: Params{DataDir: "/data", Persistence: true, RDB: true},
		want: map[string]string{
			"dir": "/data", "cluster-config-file": "/data/nodes.conf", "save": "3600 1 300 100 60 10000",
			"shutdown-on-sigterm": "save", "appendonly": "no", "dbfilename": "dump.rdb", "repl-backlog-size": "64mb",
		},
		absent: []string{"appendfsync"},
	}, {
		name:   "persistence: custom save points and AOF",
		params: Params{DataDir: "/data", Persistence: true, RDB: true, SavePoints: []string{"900 1"}, AOF: true, Fsync: "always"},
		want:   map[string]string{"save": "900 1", "appendonly": "yes", "appendfsync": "always", "shutdown-on-sigterm": "save"},
	}, {
		name:   "persistence: AOF only",
		params: Params{DataDir: "/data", Persistence: true, AOF: true},
		want:   map[string]string{"save": "", "appendonly": "yes", "appendfsync": "everysec", "shutdown-on-sigterm": "default"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			conf, err := Render(tc.params)
			if err != nil {
				t.Fatal(err)
			}
			ds, err := parse(conf)
			if err != nil {
				t.Fatalf("parse rendered config: %v\n%s", err, conf)
			}
			got := map[string][]string{}
			for _, d := range ds {
				if _, dup := got[d.Key]; dup {
					t.Fatalf("directive %s rendered twice:\n%s", d.Key, conf)
				}
				got[d.Key] = d.Args
			}
			for k, v := range tc.want {
				if args, ok := got[k]; !ok || len(args) != 1 || args[0] != v {
					t.Errorf("%s = %q, want %q", k, args, v)
				}
			}
			for _, k := range tc.absent {
				if _, ok := got[k]; ok {
					t.Errorf("%s rendered, want absent", k)
				}
			}
		})
	}
}

func TestRenderRefuses(t *testing.T) {
	for _, tc := range []struct {
		key, value, wantKey string
	}{
		{"dir", "/tmp", "dir"},
		{"DIR", "/tmp", "DIR"},
		{"dbfilename", "x.rdb", "dbfilename"},
		{"cluster-config-file", "/tmp/n.conf", "cluster-config-file"},
		{"cluster-enabled", "no", "cluster-enabled"},
		{"cluster-announce-ip", "1.2.3.4", "cluster-announce-ip"},
		{"cluster-announce-bus-port", "1", "cluster-announce-bus-port"},
		{"replica-announce-ip", "1.2.3.4", "replica-announce-ip"},
		{"port", "7000", "port"},
		{"bind", "127.0.0.1", "bind"},
		{"requirepass", "x", "requirepass"},
		{"masterauth", "x", "masterauth"},
		{"primaryauth", "x", "primaryauth"},
		{"user", "default on nopass ~* +@all", "user"},
		{"include", "/etc/passwd", "include"},
		{"loadmodule", "/x.so", "loadmodule"},
		{"rename-command", "FLUSHALL x", "rename-command"},
		{"enable-protected-configs", "yes", "enable-protected-configs"},
		{"replicaof", "1.2.3.4 6379", "replicaof"},
		{"slaveof", "1.2.3.4 6379", "slaveof"},
		{"unixsocket", "/tmp/s", "unixsocket"},
		{"unixsocketperm", "777", "unixsocketperm"},
		{"appendonly", "yes", "appendonly"},
		{"save", "1 1", "save"},
		{"logfile", "/data/x", "logfile"},
		{"", "x", ""},
		{"max memory", "1", "max memory"},
		{"maxmemory\nbind", "1", "maxmemory\nbind"},
		{"-x", "1", "-x"},
		{"maxmemory", "1gb\ndir /tmp", "maxmemory"},
		{"maxmemory", "1gb\rdir /tmp", "maxmemory"},
		{"maxmemory", "1gb\x00", "maxmemory"},
		{"maxmemory", "a\tb", "maxmemory"},
		{"maxmemory", "\x7f", "maxmemory"},
		{"maxmemory", "\u0085", "maxmemory"},
		{"maxmemory", "\xff", "maxmemory"},
		{"tls-auth-clients", "no", "tls-auth-clients"},
		{"TLS-Auth-Clients", "optional", "TLS-Auth-Clients"},
		{"maxclients", "1", "maxclients"},
		{"MaxClients", "63", "MaxClients"},
		{"maxclients", "many", "maxclients"},
		{"maxmemory-policy", strings.Repeat("x", 4097), "maxmemory-policy"},
		// What admission refuses too (apis/v1alpha1, spec.config's rules): a key that only
		// lower-cases into a directive name (the Kelvin sign), a maxclients admission cannot
		// read as a number.
		{"tcp-\u212aeepalive", "300", "tcp-\u212aeepalive"},
		{"maxclients", "000000000000000000064", "maxclients"},
	} {
		_, err := Render(Params{DataDir: "/data", Config: map[string]string{tc.key: tc.value}})
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Key != tc.wantKey {
			t.Errorf("config {%q: %q}: err %v, want a ConfigError naming %q", tc.key, tc.value, err, tc.wantKey)
		}
	}
	if _, err := Render(Params{DataDir: "/data", Config: map[string]string{"maxmemory-policy": strings.Repeat("é", 4096), "maxclients": " +64 "}}); err != nil {
		t.Errorf("4096 characters of two bytes each, maxclients +64: %v (a value's length is in characters, as admission counts it)", err)
	}
	_, err := Render(Params{DataDir: "/data", Config: map[string]string{"maxmemory": "1", "MAXMEMORY": "2"}})
	if err == nil || !strings.Contains(err.Error(), "case-insensitive") {
		t.Errorf("duplicate keys differing in case: err %v, want a refusal", err)
	}
}

// FuzzRenderConfig checks that no user config adds a directive, overrides an owned one, or
// loses its value: whatever is accepted renders as exactly one directive per user key, with
// the user's value as its only argument, beside the operator's own lines, unchanged.
func FuzzRenderConfig(f *testing.F) {
	f.Add("maxmemory", "1gb", "proc-title-template", "{title}", false)
	f.Add("maxmemory", "1gb\ndir /tmp", "x", "", true)
	f.Add("syslog-ident", `a" dir "/tmp`, "repl-backlog-size", `\"\\x0a`, true)
	f.Add("DIR", "/tmp", "cluster-announce-ip", "1.1.1.1", false)
	f.Add("k", `'q' "r" \`, "K", "v", true)
	f.Add("a", "\u2028dir /tmp", "b", "é\u0085", false)
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string, persist bool) {
		p := Params{DataDir: "/data", Persistence: persist, RDB: true, AOF: persist}
		base, err := Render(p)
		if err != nil {
			t.Fatal(err)
		}
		p.Config = map[string]string{k1: v1, k2: v2}
		conf, err := Render(p)
		if err != nil {
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("error is not a ConfigError: %v", err)
			}
			return
		}
		got, err := parse(conf)
		if err != nil {
			t.Fatalf("rendered config does not parse: %v\n%s", err, conf)
		}
		baseDirectives, _ := parse(base)
		want := map[string]string{}
		for _, d := range baseDirectives {
			want[d.Key] = d.Args[0]
		}
		for k, v := range p.Config {
			norm := strings.ToLower(k)
			if _, owned := ownedKeys[norm]; owned || Owned(norm) != "" {
				t.Fatalf("owned key %q accepted", k)
			}
			want[norm] = v // a new key, or a default it overrides
		}
		if len(got) != len(want) {
			t.Fatalf("%d directives, want %d:\n%s", len(got), len(want), conf)
		}
		for _, d := range got {
			v, ok := want[d.Key]
			if !ok {
				t.Fatalf("extra directive %q:\n%s", d.Key, conf)
			}
			if len(d.Args) != 1 || d.Args[0] != v {
				t.Fatalf("directive %s has arguments %q, want [%q]:\n%s", d.Key, d.Args, v, conf)
			}
			delete(want, d.Key)
		}
	})
}

// TestRenderTLS checks what spec.tls renders, as valkey-server reads it: TLS on the client
// port, replication and the bus, the plaintext port off unless asked for, and no TLS
// setting at all without spec.tls.
func TestRenderTLS(t *testing.T) {
	tlsOn := map[string]string{
		"tls-port": "6379", "tls-cert-file": "/etc/valkey-tls/tls.crt", "tls-key-file": "/etc/valkey-tls/tls.key",
		"tls-ca-cert-file": "/etc/valkey-tls/ca.crt", "tls-replication": "yes", "tls-cluster": "yes",
		"tls-auth-clients": "no", "cluster-port": "16379",
	}
	for _, tc := range []struct {
		name string
		tls  *TLS
		port string
	}{
		{"TLS only", &TLS{Dir: "/etc/valkey-tls"}, "0"},
		{"TLS and a plaintext port", &TLS{Dir: "/etc/valkey-tls", PlaintextPort: 6380}, "6380"},
		{"no TLS", nil, "6379"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conf, err := Render(Params{DataDir: "/data", TLS: tc.tls})
			if err != nil {
				t.Fatal(err)
			}
			ds, err := parse(conf)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string][]string{}
			for _, d := range ds {
				if _, dup := got[d.Key]; dup {
					t.Errorf("%s rendered twice:\n%s", d.Key, conf)
				}
				got[d.Key] = d.Args
			}
			if p := got["port"]; len(p) != 1 || p[0] != tc.port {
				t.Errorf("port = %q, want %s", p, tc.port)
			}
			for k, v := range tlsOn {
				a, ok := got[k]
				switch {
				case tc.tls == nil && ok && k != "cluster-port":
					t.Errorf("%s rendered without spec.tls", k)
				case tc.tls != nil && (len(a) != 1 || a[0] != v):
					t.Errorf("%s = %q, want %q", k, a, v)
				}
			}
		})
	}
}

func TestRenderRefusesUserTLSFiles(t *testing.T) {
	for _, k := range []string{"tls-cert-file", "tls-cluster", "tls-replication", "tls-port"} {
		_, err := Render(Params{DataDir: "/data", Config: map[string]string{k: "x"}})
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Key != k {
			t.Errorf("spec.config %s: got %v, want a ConfigError", k, err)
		}
	}
}
