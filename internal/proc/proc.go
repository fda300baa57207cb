// Package proc reads what Linux says of a process that solar needs to tell
// it from another process that later got the same pid: its start time.
package proc

import (
	"os"
	"strconv"
	"strings"
)

// Start returns the start time of process pid, in clock ticks after boot
// (field 22 of /proc/PID/stat), and whether it is a zombie (dead, not yet
// reaped); ok is false when it cannot be read. Together with the pid it
// names one process for the life of the machine.
func Start(pid int) (start int64, zombie, ok bool) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false, false
	}
	// The fields after the parenthesised command name, which may hold
	// spaces and parentheses: state is field 3, start time field 22.
	s := string(raw)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return 0, false, false
	}
	start, err = strconv.ParseInt(f[19], 10, 64)
	return start, f[0] == "Z", err == nil
}
