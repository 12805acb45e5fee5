package acl

import (
	"fmt"
	"strings"
	"unicode"
)

// authModifiers are the ACL rules that set a user's passwords or switch it on or off. Valkey
// reads them in any case ("NOPASS" is nopass): passwords come from the spec's Secrets, so
// none of them is taken from a rule.
var authModifiers = []string{"on", "off", "nopass", "resetpass", "reset"}

// authPrefixes start the rules that add or remove a password or its hash.
const authPrefixes = "><#!"

// CheckRule tells why a rule of spec.users may not be given to Valkey, or nil. Refused: an
// empty rule; whitespace, control characters and quotes (a rule is one token of an ACL
// SETUSER command and of a config file's "user" line, where a quote would stop the server
// from starting); and the rules that set passwords or switch the user on or off, in any case.
func CheckRule(rule string) error {
	if rule == "" {
		return fmt.Errorf("is empty")
	}
	for _, r := range rule {
		switch {
		case unicode.IsSpace(r) || unicode.IsControl(r):
			return fmt.Errorf("holds whitespace or a control character: one rule per item")
		case r == '"' || r == '\'':
			return fmt.Errorf("holds a quote, which a server's config file cannot read back")
		case r > unicode.MaxASCII:
			return fmt.Errorf("holds a character outside ASCII")
		}
	}
	lower := strings.ToLower(rule)
	for _, m := range authModifiers {
		if lower == m {
			return fmt.Errorf("sets passwords or switches the user on or off (%s, in any case): passwords come from passwordSecrets", m)
		}
	}
	if strings.ContainsRune(authPrefixes, rune(rule[0])) {
		return fmt.Errorf("sets or removes a password (%c...): passwords come from passwordSecrets", rule[0])
	}
	return nil
}

// SafeLine tells whether a config-file "user" line can be read back by a server: every token
// after the name is one CheckRule would let through, or one the operator writes itself (on,
// off, reset, a password hash).
func SafeLine(line string) bool {
	f := strings.Fields(line)
	if len(f) < 3 || f[0] != "user" {
		return false
	}
	for _, tok := range f[2:] {
		switch {
		case tok == "on" || tok == "off" || tok == "reset":
		case strings.HasPrefix(tok, "#") && len(tok) == 65:
		case CheckRule(tok) != nil:
			return false
		}
	}
	return true
}
