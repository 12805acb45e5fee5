package main

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// fill writes zeros to FILE until its file system is full (ENOSPC), syncs it, and keeps it:
// a full volume, as a data set that outgrew it leaves it. It reports the bytes written.
func fill(args []string) error {
	if len(args) != 1 {
		return errors.New("usage: kit fill FILE")
	}
	f, err := os.OpenFile(args[0], os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	buf := make([]byte, 1<<20)
	var written int64
	for {
		n, err := f.Write(buf)
		written += int64(n)
		if errors.Is(err, syscall.ENOSPC) {
			break
		}
		if err != nil {
			_ = f.Close()
			return err
		}
	}
	// The last blocks: smaller writes until not one byte more fits.
	for size := 1 << 19; size > 0; size /= 2 {
		for {
			n, err := f.Write(buf[:size])
			written += int64(n)
			if err != nil {
				break
			}
		}
	}
	_ = f.Sync() // may fail on a full file system; the data is in the file either way
	fmt.Printf("filled %s with %d bytes\n", args[0], written)
	return f.Close()
}

// rm removes files.
func rm(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: kit rm FILE [FILE]")
	}
	for _, f := range args {
		if err := os.Remove(f); err != nil {
			return err
		}
	}
	return nil
}
