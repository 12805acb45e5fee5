package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// loopDevices attaches, resizes and detaches loop devices over backing files.
type loopDevices interface {
	// Attach returns the loop device backing file, attaching one when none does.
	Attach(file string) (string, error)
	// Find returns the loop device backing file, or "" when none does.
	Find(file string) (string, error)
	// Refresh makes the device see its file's new size.
	Refresh(dev string) error
	// Detach detaches the device.
	Detach(dev string) error
}

// losetup drives util-linux losetup.
type losetup struct{}

// run runs losetup with args and returns its trimmed output.
func (losetup) run(args ...string) (string, error) {
	out, err := exec.Command("losetup", args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("losetup %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return strings.TrimSpace(string(out)), nil
}

func (l losetup) Find(file string) (string, error) {
	out, err := l.run("-n", "-O", "NAME", "-j", file)
	if err != nil {
		return "", err
	}
	if out == "" {
		return "", nil
	}
	return strings.Fields(out)[0], nil
}

func (l losetup) Attach(file string) (string, error) {
	if dev, err := l.Find(file); err != nil || dev != "" {
		return dev, err
	}
	return l.run("-f", "--show", file)
}

func (l losetup) Refresh(dev string) error {
	_, err := l.run("-c", dev)
	return err
}

func (l losetup) Detach(dev string) error {
	_, err := l.run("-d", dev)
	return err
}

// ensureFile creates file when missing and grows it (sparse) to at least size bytes.
func ensureFile(file string, size int64) error {
	f, err := os.OpenFile(file, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err == nil && st.Size() < size {
		err = f.Truncate(size)
	}
	return errors.Join(err, f.Close())
}
