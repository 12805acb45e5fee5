package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// kill sends a signal to every process named NAME (its /proc/PID/comm), as `kill -9 $(pidof
// NAME)` would in an image with a shell. The kernel drops SIGKILL sent from inside a PID
// namespace to that namespace's init process, and kill(2) still returns success, so a SIGKILL
// is checked: kit waits until the process is gone and says so when it is PID 1 and survived.
func kill(args []string) error {
	if len(args) != 2 {
		return errors.New("usage: kit kill SIGNAL NAME")
	}
	sig, err := parseSignal(args[0])
	if err != nil {
		return err
	}
	pids, err := pidsNamed(args[1])
	if err != nil {
		return err
	}
	if len(pids) == 0 {
		return fmt.Errorf("no process named %q", args[1])
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, sig); err != nil {
			return fmt.Errorf("signal %d to pid %d: %w", sig, pid, err)
		}
		fmt.Printf("sent signal %d to %s (pid %d)\n", sig, args[1], pid)
	}
	if sig != syscall.SIGKILL {
		return nil
	}
	for _, pid := range pids {
		if err := waitGone(pid, 5*time.Second); err != nil {
			return err
		}
	}
	return nil
}

func parseSignal(s string) (syscall.Signal, error) {
	s = strings.TrimPrefix(strings.ToUpper(strings.TrimPrefix(s, "-")), "SIG")
	if n, err := strconv.Atoi(s); err == nil && n > 0 && n < 65 {
		return syscall.Signal(n), nil
	}
	names := map[string]syscall.Signal{
		"HUP": syscall.SIGHUP, "INT": syscall.SIGINT, "KILL": syscall.SIGKILL, "TERM": syscall.SIGTERM,
		"STOP": syscall.SIGSTOP, "CONT": syscall.SIGCONT, "USR1": syscall.SIGUSR1, "USR2": syscall.SIGUSR2,
	}
	if sig, ok := names[s]; ok {
		return sig, nil
	}
	return 0, fmt.Errorf("unknown signal %q", s)
}

// pidsNamed lists the processes whose comm is name, kit itself excluded.
func pidsNamed(name string) ([]int, error) {
	comms, err := filepath.Glob("/proc/[0-9]*/comm")
	if err != nil {
		return nil, err
	}
	var out []int
	for _, f := range comms {
		b, err := os.ReadFile(f)
		if err != nil || strings.TrimSpace(string(b)) != name {
			continue // gone meanwhile, or another process
		}
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(f)))
		if err == nil && pid != os.Getpid() {
			out = append(out, pid)
		}
	}
	return out, nil
}

// waitGone waits until pid has exited (no longer exists or is a zombie).
func waitGone(pid int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return nil
		}
		// The state follows the command name in parentheses: "pid (comm) S ...".
		if i := strings.LastIndexByte(string(b), ')'); i >= 0 && strings.HasPrefix(strings.TrimSpace(string(b[i+1:])), "Z") {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	if pid == 1 {
		return errors.New("pid 1 survived SIGKILL: the kernel ignores SIGKILL sent to a PID namespace's init from inside it; signal it from the node")
	}
	return fmt.Errorf("pid %d still runs %s after SIGKILL", pid, timeout)
}
