package bench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ, the unit of /proc/stat (100 on Linux everywhere it runs).
const clockTicks = 100

// MachineCPU is the CPU time, in seconds, the machine's processors spent busy (not idle
// nor waiting for I/O) since boot: /proc/stat's user, nice, system, irq, softirq and steal.
func MachineCPU() (float64, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, fmt.Errorf("unexpected first line of /proc/stat: %q", line)
	}
	var ticks float64
	for _, i := range []int{1, 2, 3, 6, 7, 8} {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/stat: %w", err)
		}
		ticks += v
	}
	return ticks / clockTicks, nil
}
