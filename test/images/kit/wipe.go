package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// wipe stops every process named NAME (SIGSTOP, so that it writes nothing more), removes
// everything inside DIR, then kills it (SIGKILL, as kill does): the server's container
// restarts in its pod, at its address, on an empty data directory, as it does after its
// volume was emptied or replaced or its nodes.conf lost.
func wipe(args []string) error {
	if len(args) != 2 {
		return errors.New("usage: kit wipe DIR NAME")
	}
	dir, name := args[0], args[1]
	pids, err := pidsNamed(name)
	if err != nil {
		return err
	}
	if len(pids) == 0 {
		return fmt.Errorf("no process named %q", name)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			return fmt.Errorf("stop pid %d: %w", pid, err)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
		fmt.Printf("removed %s\n", filepath.Join(dir, e.Name()))
	}
	return kill([]string{"KILL", name})
}
