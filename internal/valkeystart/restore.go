package valkeystart

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// RestoredFile is the file, in the data directory, that holds the id of the restore (the ValkeyBackup's name)
// already applied to it, so the restore step runs once per data directory: a restart of a
// restored node starts on what the server saved since, not on the backup again.
const RestoredFile = "valkey-start.restored"

// Identities of a restored node (--restore-identity).
const (
	// IdentityKeep keeps the node ID of nodes.conf and forgets every other member.
	IdentityKeep = "keep"
	// IdentityFresh removes nodes.conf: the server starts with a new node ID.
	IdentityFresh = "fresh"
)

// Restore prepares a data directory restored from a backup (a copy of another node's
// volume) before the server starts on it, once per restore id:
//   - fresh: nodes.conf is removed, so the server starts with a new node ID and no member;
//   - keep: nodes.conf is cut to its myself line, as a primary without slots, epochs 0, so
//     the server keeps its node ID and knows no member.
//
// Either way the server knows none of the backed-up cluster's members, so it never contacts
// them, and, a primary loading keys of slots nobody owns, it claims those slots itself. The
// clean-stop marker is removed (the data is not a clean stop of this node) and id is
// written to RestoredFile. It reports whether it did anything; logf receives what it did.
func Restore(dataDir, id, identity string, logf func(format string, args ...any)) (bool, error) {
	if id == "" {
		return false, nil
	}
	if identity != IdentityKeep && identity != IdentityFresh {
		return false, fmt.Errorf("restore identity %q: want %s or %s", identity, IdentityKeep, IdentityFresh)
	}
	marker := filepath.Join(dataDir, RestoredFile)
	if b, err := os.ReadFile(marker); err == nil && strings.TrimSpace(string(b)) == id {
		return false, nil
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("read %s: %w", RestoredFile, err)
	}
	did, err := restoreNodesFile(dataDir, identity)
	if err != nil {
		return false, err
	}
	if err := os.Remove(filepath.Join(dataDir, MarkerFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("remove %s: %w", MarkerFile, err)
	}
	if err := writeSynced(dataDir, RestoredFile, []byte(id+"\n")); err != nil {
		return false, err
	}
	logf("restore %s (identity %s): %s", id, identity, did)
	return true, nil
}

// restoreNodesFile applies identity to nodes.conf and says what it did.
func restoreNodesFile(dataDir, identity string) (string, error) {
	path := filepath.Join(dataDir, NodesFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "no nodes.conf: the server starts with a new node ID", nil
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w", NodesFile, err)
	}
	if identity == IdentityFresh {
		if err := os.Remove(path); err != nil {
			return "", fmt.Errorf("remove %s: %w", NodesFile, err)
		}
		return "removed nodes.conf: the server starts with a new node ID", syncDir(dataDir)
	}
	line, err := keptNodesFile(string(b))
	if err != nil {
		return "", err
	}
	if err := writeSynced(dataDir, NodesFile, []byte(line)); err != nil {
		return "", err
	}
	return "nodes.conf cut to this node (" + strings.Fields(line)[0] + ") as a primary without slots or members", nil
}

// keptNodesFile is nodes.conf reduced to its myself line, rewritten as a primary without
// slots and config epoch 0, with the epochs reset: the node ID and the address field
// (with its aux fields, such as shard-id) are kept.
func keptNodesFile(conf string) (string, error) {
	for _, line := range strings.Split(conf, "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || f[0] == "vars" {
			continue
		}
		for _, flag := range strings.Split(f[2], ",") {
			if flag == "myself" {
				return fmt.Sprintf("%s %s myself,master - 0 0 0 connected\nvars currentEpoch 0 lastVoteEpoch 0\n", f[0], f[1]), nil
			}
		}
	}
	return "", fmt.Errorf("%s has no myself line: cannot keep the node ID", NodesFile)
}

// writeSynced writes name in dir through a synced temporary file renamed over it, then
// syncs dir, so a crash leaves either the old or the new content.
func writeSynced(dir, name string, data []byte) error {
	tmp, err := os.CreateTemp(dir, name+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dir, name))
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", name, err)
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	defer func() { _ = d.Close() }()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
