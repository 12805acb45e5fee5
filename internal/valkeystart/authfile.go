package valkeystart

import (
	"errors"
	"fmt"
	"os"

	"valkey.io/operator/workloadcontroller/valkeyconf"
)

// writeAuthFile writes the servers' password as requirepass and masterauth into AuthFile
// (mode 0600), the file the server's config includes: the password then reaches the server
// through its config, never through its command line, where ps and set-proc-title would
// show it. Without an AuthFile nothing is written; with one, a password is required.
func (w *Wrapper) writeAuthFile() error {
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
	if err := os.Remove(w.AuthFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("replace %s: %w", w.AuthFile, err)
	}
	if err := os.WriteFile(w.AuthFile, []byte(body), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", w.AuthFile, err)
	}
	return nil
}
