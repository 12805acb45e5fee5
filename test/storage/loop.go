package main

import (
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

func run(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return strings.TrimSpace(string(out)), nil
}

func (losetup) Find(file string) (string, error) {
	out, err := run("losetup", "-n", "-O", "NAME", "-j", file)
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
	return run("losetup", "-f", "--show", file)
}

func (losetup) Refresh(dev string) error {
	_, err := run("losetup", "-c", dev)
	return err
}

func (losetup) Detach(dev string) error {
	_, err := run("losetup", "-d", dev)
	return err
}

// ensureFile creates file when missing and grows it (sparse) to at least size bytes.
func ensureFile(file string, size int64) error {
	f, err := os.OpenFile(file, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Size() < size {
		return f.Truncate(size)
	}
	return nil
}
