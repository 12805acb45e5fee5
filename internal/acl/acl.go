// Package acl renders and reads the Valkey ACL users the operator keeps on cluster nodes:
// the operator's own user, the users of spec.users and the default user. The same lines are
// written into a server's config at start (valkey-start) and sent live (ACL SETUSER) by the
// topology controller.
package acl

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
)

// OperatorRules are the permissions of the operator's own user: the commands the topology
// controller, valkey-start and the probes send, the replication commands (it is the
// replicas' masteruser), RESTORE-ASKING and SELECT for MIGRATE on the target, and every key
// (MIGRATE moves any key). Write commands and MULTI/EXEC: Valkey 9's atomic slot migration
// replays the moved keys on the target as the user the target authenticated with (its
// masteruser). ACL itself is granted: the operator applies the users. No read command and
// no channel is granted. BGSAVE and BGREWRITEAOF: a backup saves one node per shard.
var OperatorRules = []string{
	"~*", "resetchannels", "-@all",
	"+ping", "+info", "+cluster", "+asking", "+readonly", "+select",
	"+migrate", "+restore-asking", "+memory|usage", "+dbsize", "+flushall", "+wait",
	"+config|get", "+config|set", "+client|pause", "+client|unpause", "+client|setname",
	"+acl", "+psync", "+replconf", "+sync", "+auth", "+hello", "+@write", "+multi", "+exec",
	"+bgsave", "+bgrewriteaof",
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
