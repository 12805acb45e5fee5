package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// imageOps copies volume images and prepares restored ones. The disk folder is XFS with
// reflink, so copies share blocks until written (instant, no space used up front).
type imageOps interface {
	// Snapshot copies the backing file of the loop device dev to dst (dst appears whole or
	// not at all). When dev's file system is mounted it is frozen for the copy, so the image
	// holds a clean file system rather than a crash-consistent one.
	Snapshot(dev, file, dst string) error
	// Clone copies src to dst (a reflink copy).
	Clone(src, dst string) error
	// Adopt prepares the file system on dev, a copy of another volume's: it replays its log,
	// grows it to the device when grow is set, and gives it a new UUID (XFS refuses to mount
	// two file systems with one UUID, and the copy's source may still be mounted).
	Adopt(dev string, grow bool) error
}

// xfsImages is imageOps with coreutils, util-linux and xfsprogs on the node.
type xfsImages struct{}

// command runs name with args and wraps a failure with its output.
func command(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func (xfsImages) Clone(src, dst string) error {
	tmp := dst + ".tmp"
	if err := command("cp", "--reflink=always", src, tmp); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, dst)
}

func (x xfsImages) Snapshot(dev, file, dst string) (err error) {
	if dev != "" {
		mnt, err := mountPoint(dev)
		if err != nil {
			return err
		}
		if mnt != "" {
			if err := command("fsfreeze", "-f", mnt); err != nil {
				return err
			}
			defer func() { err = errors.Join(err, command("fsfreeze", "-u", mnt)) }()
		}
	}
	return x.Clone(file, dst)
}

func (xfsImages) Adopt(dev string, grow bool) (err error) {
	mnt, err := os.MkdirTemp("", "loop-restore-")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, os.Remove(mnt)) }()
	// nouuid: the source of the copy may be mounted; mounting replays the copy's log.
	if err := command("mount", "-t", "xfs", "-o", "nouuid", dev, mnt); err != nil {
		return err
	}
	if grow {
		if err := command("xfs_growfs", mnt); err != nil {
			return errors.Join(err, command("umount", mnt))
		}
	}
	if err := command("umount", mnt); err != nil {
		return err
	}
	return command("xfs_admin", "-U", "generate", dev)
}

// mountPoint is a folder where dev is mounted ("" when it is not).
func mountPoint(dev string) (string, error) {
	f, err := os.Open("/proc/mounts")
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) >= 2 && fields[0] == dev {
			return strings.ReplaceAll(fields[1], `\040`, " "), nil
		}
	}
	return "", s.Err()
}
