// Package acl renders and reads the Valkey ACL users the operator keeps on cluster nodes:
// the operator's own user, the users of spec.users and the default user. The same lines are
// written into a server's config at start (valkey-start) and sent live (ACL SETUSER) by the
// topology controller.
package acl

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
)

// OperatorRules are the permissions of the operator's own user: the commands the topology
// controller, valkey-start and the probes send, RESTORE-ASKING and SELECT for MIGRATE on
// the target, and every key (MIGRATE moves any key; it is the one command of this user that
// reads data, and only to move it). ACL itself is granted: the operator applies the users.
// BGSAVE and BGREWRITEAOF: a backup saves one node per shard. EXISTS: before a primary
// without slots is flushed to become a replica, each of its keys must exist on its slot's
// owner (key names, no value). SELECT also reaches the other databases of a server with
// cluster-databases (Valkey 9): that check and a key-by-key migration go through each. WATCH, MULTI, DEL, EXEC: a key-by-key migration copies a
// batch (MIGRATE COPY) and deletes it on the source once a replica of the target has it,
// unless a client wrote one of its keys meanwhile; MIGRATE itself deletes what it moves, so
// DEL grants nothing more. No other read command, no
// replication command (the replicas authenticate as ReplicationUser) and no channel is
// granted.
var OperatorRules = []string{
	"~*", "resetchannels", "-@all",
	"+ping", "+info", "+cluster", "+asking", "+readonly", "+select",
	"+migrate", "+restore-asking", "+memory|usage", "+dbsize", "+exists", "+flushall", "+wait",
	"+watch", "+unwatch", "+multi", "+exec", "+del",
	"+config|get", "+config|set", "+client|pause", "+client|unpause", "+client|setname",
	"+acl", "+auth", "+hello", "+bgsave", "+bgrewriteaof",
}

// LegacyOperatorRules are the operator's user's permissions while a server of the cluster
// still replicates as that user (its masteruser, as valkey-start made servers before the
// replication user existed): OperatorRules with the replication commands, and the write
// commands Valkey 9's atomic slot migration replays as the masteruser. They go once every
// server of the cluster runs with ReplicationUser, which a roll brings.
var LegacyOperatorRules = append(append([]string{}, OperatorRules...),
	"+psync", "+replconf", "+sync", "+@write")

// ReplicationRules are the permissions of the replication user, the replicas' masteruser,
// on a server of the given Valkey major version (0 for Redis): the replication handshake
// (PING, REPLCONF, PSYNC, SYNC); from Valkey 9, for its atomic slot migration, which a
// target starts as its masteruser (CLUSTER SYNCSLOTS, a command older servers do not know
// and would refuse the whole user for) and whose moved keys are replayed as that user, every
// key with the write commands (but FLUSHALL and FLUSHDB) and MULTI/EXEC.
func ReplicationRules(valkeyMajor int) []string {
	rules := []string{"~*", "resetchannels", "-@all", "+ping", "+auth", "+hello", "+select", "+psync", "+replconf", "+sync"}
	if valkeyMajor >= 9 {
		rules = append(rules, "+cluster|syncslots", "+@write", "-flushall", "-flushdb", "+multi", "+exec")
	}
	return rules
}

// DefaultRules are the default user's permissions when it is kept without spec.users: all,
// as a server with only requirepass has.
var DefaultRules = []string{"~*", "&*", "+@all"}

// User is one ACL user as the operator sets it: on or off, its password hashes, its rules.
type User struct {
	Name   string
	On     bool
	Hashes []string // SHA-256 of each password, lower-case hex
	Rules  []string
}

// Hash is the SHA-256 of a password in the form ACL rules take after '#'.
func Hash(password string) string {
	sum := sha256.Sum256([]byte(password))
	return hex.EncodeToString(sum[:])
}

// Operator is the operator's own user with password.
func Operator(name, password string) User {
	return User{Name: name, On: true, Hashes: []string{Hash(password)}, Rules: OperatorRules}
}

// ReplicationUser is the user replicas (and Valkey 9's slot migration targets) authenticate
// to their primary as (masteruser). Its password, derived from the operator's, is the only
// one a server's config shows (CONFIG GET masterauth); spec.users may not name it.
const ReplicationUser = "valkey-replication"

// Replication is the replication user with its password, derived from the operator's
// (ReplicationPassword), for a server of the given Valkey major version (ReplicationRules).
func Replication(operatorPassword string, valkeyMajor int) User {
	return User{Name: ReplicationUser, On: true, Hashes: []string{Hash(ReplicationPassword(operatorPassword))}, Rules: ReplicationRules(valkeyMajor)}
}

// ReplicationPassword is the replication user's password: an HMAC-SHA-256 of the user's
// name keyed by the operator's password, so that it changes with it and needs no Secret of
// its own. It is the masterauth of each server, which CONFIG GET shows: what it reveals
// cannot be turned back into the operator's password.
func ReplicationPassword(operatorPassword string) string {
	return derivedPassword(operatorPassword, ReplicationUser)
}

// MetricsUser is the user valkey-start's metrics exporter reads each server's figures as
// (INFO, CLUSTER INFO, latency, slow log). Its password is derived from the operator's, as
// the replication user's is; spec.users may not name it.
const MetricsUser = "valkey-metrics"

// MetricsRules are the metrics user's permissions: what the exporter sends on each scrape,
// and nothing that reads a key, a value or the server's config (CONFIG GET would show
// masterauth): INFO, CLUSTER INFO, LATENCY LATEST and HISTOGRAM, SLOWLOG GET and LEN.
// COMMANDLOG LEN (the slow log of Valkey 8.1 on) from Valkey 9: a server that does not know
// a command refuses the whole user, and the major version is what is known of a server
// (an 8.1 server answers the exporter's COMMANDLOG LEN with NOPERM, counted in ACL LOG).
func MetricsRules(valkeyMajor int) []string {
	rules := []string{"resetkeys", "resetchannels", "-@all", "+info", "+cluster|info",
		"+latency|latest", "+latency|histogram", "+slowlog|get", "+slowlog|len"}
	if valkeyMajor >= 9 {
		rules = append(rules, "+commandlog|len")
	}
	return rules
}

// Metrics is the metrics user with its password, derived from the operator's
// (MetricsPassword), for a server of the given Valkey major version (MetricsRules).
func Metrics(operatorPassword string, valkeyMajor int) User {
	return User{Name: MetricsUser, On: true, Hashes: []string{Hash(MetricsPassword(operatorPassword))}, Rules: MetricsRules(valkeyMajor)}
}

// MetricsPassword is the metrics user's password: an HMAC-SHA-256 of the user's name keyed
// by the operator's password (ReplicationPassword's way), known only to valkey-start and
// the topology controller.
func MetricsPassword(operatorPassword string) string {
	return derivedPassword(operatorPassword, MetricsUser)
}

// derivedPassword is an HMAC-SHA-256 of name keyed by the operator's password, in hex.
func derivedPassword(operatorPassword, name string) string {
	m := hmac.New(sha256.New, []byte(operatorPassword))
	m.Write([]byte(name))
	return hex.EncodeToString(m.Sum(nil))
}

// modifiers are the user's ACL modifiers after its name: reset (so that nothing set
// before survives), on or off, each password hash, the rules.
func (u User) modifiers() []string {
	out := []string{"reset", "off"}
	if u.On {
		out[1] = "on"
	}
	for _, h := range u.Hashes {
		out = append(out, "#"+h)
	}
	return append(out, u.Rules...)
}

// SetUser is the ACL SETUSER command that gives a server exactly this user, in one atomic
// step: connections authenticated as the user stay, and a password it keeps keeps working.
func (u User) SetUser() []string {
	return append([]string{"ACL", "SETUSER", u.Name}, u.modifiers()...)
}

// Line is the user as a config-file "user" directive.
func (u User) Line() string {
	return "user " + u.Name + " " + strings.Join(u.modifiers(), " ")
}

// RulesKey identifies the user's rules (and on/off) for comparing with what a server lists.
func (u User) RulesKey() string {
	on := "off"
	if u.On {
		on = "on"
	}
	return on + " " + strings.Join(u.Rules, " ")
}

// ParseLine reads a line written by Line; ok is false for anything else.
func ParseLine(line string) (name string, ok bool) {
	f := strings.Fields(line)
	if len(f) < 3 || f[0] != "user" || f[2] != "reset" {
		return "", false
	}
	return f[1], true
}

// Listed is a user as ACL LIST shows it.
type Listed struct {
	Name   string
	On     bool
	NoPass bool
	Hashes []string // sorted
	// Rest is everything else the server lists (keys, channels, commands, flags), as it
	// lists it.
	Rest string
}

// ParseList reads the reply of ACL LIST, by user name.
func ParseList(lines []string) map[string]Listed {
	out := make(map[string]Listed, len(lines))
	for _, line := range lines {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "user" {
			continue
		}
		l := Listed{Name: f[1]}
		var rest []string
		for _, tok := range f[2:] {
			switch {
			case tok == "on":
				l.On = true
			case tok == "off":
			case tok == "nopass":
				l.NoPass = true
			case strings.HasPrefix(tok, "#"):
				l.Hashes = append(l.Hashes, tok[1:])
			default:
				rest = append(rest, tok)
			}
		}
		slices.Sort(l.Hashes)
		l.Rest = strings.Join(rest, " ")
		out[l.Name] = l
	}
	return out
}

// SameAuth tells whether the listed user is on or off as u is and accepts exactly u's
// passwords.
func (l Listed) SameAuth(u User) bool {
	if l.On != u.On || l.NoPass || len(l.Hashes) != len(u.Hashes) {
		return false
	}
	want := slices.Clone(u.Hashes)
	slices.Sort(want)
	return slices.Equal(want, l.Hashes)
}
