package bench

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Memory is a process's resident memory in bytes, from /proc/<pid>/status: all of it
// (VmRSS), and its parts: anonymous (the heap, stacks and the runtime's own: RssAnon) and
// file-backed (the pages of the binary and libraries read so far: RssFile).
type Memory struct {
	RSS, Anon, File float64
}

// String is the memory as the benchmarks print it.
func (m Memory) String() string {
	return fmt.Sprintf("RSS %.1f MiB (anonymous %.1f, the binary's pages %.1f)", MiB(m.RSS), MiB(m.Anon), MiB(m.File))
}

// ReadMemory reads the resident memory of process pid.
func ReadMemory(pid int) (Memory, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Memory{}, err
	}
	defer func() { _ = f.Close() }()
	var m Memory
	fields := map[string]*float64{"VmRSS:": &m.RSS, "RssAnon:": &m.Anon, "RssFile:": &m.File}
	seen := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, _ := strings.Cut(sc.Text(), "\t")
		dst, ok := fields[name]
		if !ok {
			continue
		}
		v := strings.Fields(rest)
		if len(v) != 2 || v[1] != "kB" {
			return Memory{}, fmt.Errorf("unexpected line %q in /proc/%d/status", sc.Text(), pid)
		}
		kb, err := strconv.ParseFloat(v[0], 64)
		if err != nil {
			return Memory{}, err
		}
		*dst, seen = kb*1024, seen+1
	}
	if err := sc.Err(); err != nil {
		return Memory{}, err
	}
	if seen != len(fields) {
		return Memory{}, fmt.Errorf("VmRSS, RssAnon or RssFile missing from /proc/%d/status", pid)
	}
	return m, nil
}

// MiB converts bytes to mebibytes.
func MiB(b float64) float64 { return b / (1 << 20) }
