package valkeystart

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"valkey.io/operator/internal/acl"
	"valkey.io/operator/internal/valkeyconf"
)

// writeAuthFile writes the server's credentials into AuthFile (mode 0600), the file the
// server's config includes: passwords then reach the server through its config, never
// through its command line, where ps and set-proc-title would show them. Without a User,
// the password is requirepass and masterauth; with one (a cluster node), see UsersConfig.
// Without an AuthFile nothing is written; with one, a password is required.
func (w *Wrapper) writeAuthFile(serverMajor int) error {
	if w.AuthFile == "" {
		return nil
	}
	if w.Password == "" {
		return errors.New("no password: the server's config includes " + w.AuthFile +
			" but the password variable is empty; check the key of the password Secret")
	}
	q := valkeyconf.Quote(w.Password)
	body := "# written by valkey-start from the password Secret; not kept on disk\n" +
		"requirepass " + q + "\nmasterauth " + q + "\n"
	if w.User != "" {
		users, err := w.readACLFile()
		if err != nil {
			return err
		}
		hold := HoldsReplication(w.DataDir)
		if hold {
			w.logf("no %s: this server starts with a new node ID and none of the data its node may have had; "+
				"the replication user stays off (no replica can sync from it) until the topology controller switches it on", NodesFile)
		}
		body = UsersConfig(w.User, w.Password, users, serverMajor, hold)
	}
	if err := os.Remove(w.AuthFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("replace %s: %w", w.AuthFile, err)
	}
	if err := os.WriteFile(w.AuthFile, []byte(body), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", w.AuthFile, err)
	}
	return nil
}

// readACLFile is the content of ACLFile; empty when there is none (the server then starts
// with the operator's user only, and the topology controller applies the others live).
func (w *Wrapper) readACLFile() (string, error) {
	if w.ACLFile == "" {
		return "", nil
	}
	b, err := os.ReadFile(w.ACLFile)
	if errors.Is(err, os.ErrNotExist) {
		w.logf("no %s: starting with the operator's user only", w.ACLFile)
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w", w.ACLFile, err)
	}
	return string(b), nil
}

// UsersConfig is the auth file of a cluster node: the operator's own user (user with
// password), the replication user the replicas authenticate to their primary as
// (masteruser, masterauth), the metrics user valkey-start's exporter reads the server as,
// and the "user" lines of users (the cluster's ACL Secret). Lines of users that are not "user"
// directives, that name the operator's, the replication or the metrics user, or that a server could not read back (a quote,
// a password rule: acl.SafeLine) are left out. Without a line for the
// default user it is switched off: a server without requirepass would otherwise let anyone
// in as default. serverMajor is the server's Valkey major version (0 for Redis): the
// replication and metrics users' rules depend on it (acl.ReplicationRules, acl.MetricsRules).
// With holdReplication the replication user is written switched off (see HoldsReplication).
func UsersConfig(user, password string, users string, serverMajor int, holdReplication bool) string {
	var b strings.Builder
	b.WriteString("# written by valkey-start from the operator's Secret and the cluster's ACL Secret; not kept on disk\n")
	b.WriteString(acl.Operator(user, password).Line() + "\n")
	replication := acl.Replication(password, serverMajor)
	replication.On = !holdReplication
	b.WriteString(replication.Line() + "\n")
	b.WriteString(acl.Metrics(password, serverMajor).Line() + "\n")
	b.WriteString("masteruser " + acl.ReplicationUser + "\nmasterauth " + valkeyconf.Quote(acl.ReplicationPassword(password)) + "\n")
	hasDefault := false
	for _, line := range strings.Split(users, "\n") {
		name, ok := acl.ParseLine(strings.TrimSpace(line))
		if !ok || name == user || name == acl.ReplicationUser || name == acl.MetricsUser || !acl.SafeLine(strings.TrimSpace(line)) {
			continue // a line the server could not read back would stop it from starting
		}
		hasDefault = hasDefault || name == "default"
		b.WriteString(strings.TrimSpace(line) + "\n")
	}
	if !hasDefault {
		b.WriteString(acl.User{Name: "default"}.Line() + "\n")
	}
	return b.String()
}
