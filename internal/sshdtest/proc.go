package sshdtest

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// killGrace bounds how long killTree waits for killed processes to be
// gone; SIGKILL cannot be caught, so only a process stuck in the kernel
// takes longer.
const killGrace = 5 * time.Second

// proc names a process across pid reuse: its pid and its start time.
type proc struct {
	pid   int
	start string
}

// procStat is what killTree reads of /proc/PID/stat.
type procStat struct {
	state byte // 'Z' for a zombie, which holds no files any more
	ppid  int
	start string // clock ticks after boot
}

func readStat(pid int) (procStat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	// The command name, field 2, may hold spaces and parentheses: the
	// fields that follow start after its last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, false
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state), f[1] field 4 (ppid), f[19] field 22
	// (starttime).
	if len(f) < 20 || len(f[0]) != 1 {
		return procStat{}, false
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return procStat{}, false
	}
	return procStat{state: f[0][0], ppid: ppid, start: f[19]}, true
}

// descendants returns the pids of every process below root in the process
// tree, as /proc shows it now.
func descendants(root int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := make(map[int][]int)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := readStat(pid); ok {
			children[st.ppid] = append(children[st.ppid], pid)
		}
	}
	var out []int
	for queue := []int{root}; len(queue) > 0; queue = queue[1:] {
		for _, c := range children[queue[0]] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// killTree kills root and every process below it, and waits until those
// below are gone or zombies (root, the caller's child, is the caller's to
// reap). Each process is stopped before the tree is read again, so none can
// fork a child that escapes; once a reading finds nobody new, all are
// killed. A process that left the tree (its parent died and it was
// reparented) is not found.
func killTree(root int) {
	_ = syscall.Kill(root, syscall.SIGSTOP)
	var victims []proc
	seen := map[int]bool{}
	for {
		fresh := false
		for _, pid := range descendants(root) {
			if seen[pid] {
				continue
			}
			seen[pid], fresh = true, true
			_ = syscall.Kill(pid, syscall.SIGSTOP)
			if st, ok := readStat(pid); ok {
				victims = append(victims, proc{pid: pid, start: st.start})
			}
		}
		if !fresh {
			break
		}
	}
	_ = syscall.Kill(root, syscall.SIGKILL)
	for _, p := range victims {
		_ = syscall.Kill(p.pid, syscall.SIGKILL)
	}
	deadline := time.Now().Add(killGrace)
	for _, p := range victims {
		for alive(p) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// alive reports whether p still runs: it exists, is the same process and
// is not a zombie.
func alive(p proc) bool {
	st, ok := readStat(p.pid)
	return ok && st.start == p.start && st.state != 'Z' && st.state != 'X'
}
