package bench

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// RSS is the resident set size of process pid in bytes, from /proc/<pid>/status (VmRSS).
func RSS(pid int) (float64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, fmt.Errorf("unexpected VmRSS line %q", sc.Text())
		}
		kb, err := strconv.ParseFloat(fields[0], 64)
		return kb * 1024, err
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

// MiB converts bytes to mebibytes.
func MiB(b float64) float64 { return b / (1 << 20) }
