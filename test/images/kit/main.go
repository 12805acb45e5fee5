// Command kit is a small static helper in the test Valkey image, which has no shell, so tests
// can look inside a running container with `kubectl exec`:
//
//	kit df PATH       size, free and available bytes of the file system holding PATH
//	kit cat FILE...   print files
//	kit ls DIR        list a folder (name, size, mode, uid:gid)
//	kit id            uid, gid and groups of the process
//	kit sleep SECONDS sleep (0: until SIGTERM)
//	kit kill SIGNAL NAME  send SIGNAL (9, KILL or SIGKILL) to every process whose /proc/PID/comm
//	                  is NAME, then wait until a killed one is gone (SIGKILL)
//	kit dial HOST:PORT [SECONDS]  open a TCP connection and close it (timeout 3s)
//	kit fill FILE     write zeros to FILE until its file system is full, and keep it
//	kit rm FILE...    remove files
//	kit cluster-client [-keys N] HOST:PORT  write N keys through a cluster client seeded
//	                  with HOST:PORT and read them back (see client.go)
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "kit:", err)
		os.Exit(1)
	}
}

// commands maps each subcommand to what runs it with the arguments after its name.
var commands = map[string]func(args []string) error{
	"df":    df,
	"cat":   cat,
	"ls":    ls,
	"id":    id,
	"sleep": sleep,
	"kill":  kill,
	"dial":  dial,
	"fill":  fill,
	"rm":    rm,
	"wipe":  wipe,

	"cluster-client": clusterClient,
}

func run(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: kit df|cat|ls|id|sleep|kill|dial|fill|rm|wipe|cluster-client ARGS")
	}
	cmd, ok := commands[args[0]]
	if !ok {
		return fmt.Errorf("unknown command %q", args[0])
	}
	return cmd(args[1:])
}

func df(args []string) error {
	if len(args) != 1 {
		return errors.New("usage: kit df PATH")
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(args[0], &st); err != nil {
		return err
	}
	bs := uint64(st.Bsize)
	fmt.Printf("size=%d free=%d avail=%d\n", st.Blocks*bs, st.Bfree*bs, st.Bavail*bs)
	return nil
}

func cat(files []string) error {
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return err
		}
		_, err = io.Copy(os.Stdout, fh)
		if err := errors.Join(err, fh.Close()); err != nil {
			return err
		}
	}
	return nil
}

func ls(args []string) error {
	if len(args) != 1 {
		return errors.New("usage: kit ls DIR")
	}
	entries, err := os.ReadDir(args[0])
	if err != nil {
		return err
	}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			return err
		}
		uid, gid := -1, -1
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			uid, gid = int(st.Uid), int(st.Gid)
		}
		fmt.Printf("%s %d %s %d:%d\n", e.Name(), info.Size(), info.Mode(), uid, gid)
	}
	return nil
}

func id([]string) error {
	groups, _ := os.Getgroups()
	fmt.Printf("uid=%d gid=%d groups=%v\n", os.Getuid(), os.Getgid(), groups)
	return nil
}

func sleep(args []string) error {
	n := 0
	if len(args) > 0 {
		var err error
		if n, err = strconv.Atoi(args[0]); err != nil {
			return err
		}
	}
	// As PID 1 of a container SIGTERM would be ignored without a handler.
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	var timeout <-chan time.Time
	if n > 0 {
		timeout = time.After(time.Duration(n) * time.Second)
	}
	select {
	case <-stop:
	case <-timeout:
	}
	return nil
}
