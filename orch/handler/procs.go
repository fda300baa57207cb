package handler

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/solarops/solar/internal/fileread"

	"golang.org/x/sys/unix"
)

// Procs identifies the process group of a running attempt on this
// machine, durably enough to find it again from another process after the
// executor died: the group id alone may by then name a stranger's group.
// A run directory's watchdog reads its JSON with a fixed pattern
// (watchdogProgram): a new field goes after Token, or the pattern changes
// with it (TestWatchdogEndsANoteOfADeadExecutor fails otherwise).
type Procs struct {
	PGID int `json:"pgid"`
	// Start is a time, in clock ticks since boot (the unit of
	// /proc/PID/stat field 22), taken just before the leader started: the
	// group's members started no earlier.
	Start uint64 `json:"start"`
	// Boot is the kernel's boot id: after a reboot no group survives.
	Boot string `json:"boot"`
	// Token is the attempt's SOLAR_ATTEMPT_ID. Every process of the
	// attempt inherits it in its environment, so even one that left the
	// group, or one started before the group could be recorded, is found.
	Token string `json:"token,omitempty"`
}

// attemptVar carries Procs.Token in a script's environment.
const attemptVar = "SOLAR_ATTEMPT_ID"

// newToken returns a fresh attempt token.
func newToken() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// environHas reports whether process pid's environment holds kv exactly.
// Processes of other users are not readable, and not ours.
func environHas(pid int, kv string) bool {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	for v := range bytes.SplitSeq(raw, []byte{0}) {
		if string(v) == kv {
			return true
		}
	}
	return false
}

// procStat is what solar reads from /proc/PID/stat.
type procStat struct {
	state byte
	pgrp  int
	start uint64
}

// readStat parses /proc/PID/stat. The command name, in parentheses, may
// hold spaces and parentheses itself, so fields are counted from the last
// ")".
func readStat(pid int) (procStat, error) {
	raw, err := fileread.Read("/proc/"+strconv.Itoa(pid)+"/stat", 64<<10)
	if err != nil {
		return procStat{}, err
	}
	s := string(raw)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return procStat{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(s[i+2:]) // f[0] is field 3 (state)
	if len(f) < 20 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	pgrp, err1 := strconv.Atoi(f[2])                // field 5
	start, err2 := strconv.ParseUint(f[19], 10, 64) // field 22
	if err1 != nil || err2 != nil {
		return procStat{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	return procStat{state: f[0][0], pgrp: pgrp, start: start}, nil
}

var bootID = sync.OnceValue(func() string {
	raw, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(raw))
})

// clockTicks is the kernel's USER_HZ, the unit of /proc/PID/stat's start
// times: 100 on every architecture Linux runs solar on.
const clockTicks = 100

// bootTicks is the time since boot in clock ticks, rounded down. Taken
// just before a fork, it is no later than the child's start time as
// /proc/PID/stat gives it (both count from boot, suspend included), and it
// costs no read of /proc; 0 when unknown.
func bootTicks() uint64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts) != nil {
		return 0
	}
	return uint64(ts.Sec)*clockTicks + uint64(ts.Nsec)/(1e9/clockTicks)
}

// members lists the live (not zombie) processes of g: those in its process
// group that started no earlier than its leader, and those that carry its
// token.
func (g Procs) members() ([]int, error) {
	if g.Boot == "" || g.Boot != bootID() || (g.PGID <= 1 && g.Token == "") {
		return nil, nil // another boot: nothing of it runs
	}
	self := os.Getpid()
	dir, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	names, err := dir.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	var out []int
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		if pid == self {
			continue
		}
		st, err := readStat(pid)
		if err != nil || st.state == 'Z' {
			continue
		}
		inGroup := g.PGID > 1 && st.pgrp == g.PGID && st.start >= g.Start
		if inGroup || (g.Token != "" && environHas(pid, attemptVar+"="+g.Token)) {
			out = append(out, pid)
		}
	}
	return out, nil
}

// ErrSurvivor means a group of an earlier attempt would not die.
var ErrSurvivor = errors.New("an earlier attempt's processes are still running")

// KillProcs ends whatever is left of an attempt's process group (after the
// executor that started it died) and waits up to wait for it to be gone.
// It reports how many processes it killed. Processes that merely reuse
// the group id, started before the attempt or in another boot, are left
// alone.
func KillProcs(g Procs, wait time.Duration) (int, error) {
	pids, err := g.members()
	if err != nil || len(pids) == 0 {
		return 0, err
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	deadline := time.Now().Add(wait)
	for {
		left, err := g.members()
		if err != nil {
			return len(pids), err
		}
		if len(left) == 0 {
			return len(pids), nil
		}
		if time.Now().After(deadline) {
			return len(pids), fmt.Errorf("%w: process group %d (pids %v) outlived SIGKILL for %s", ErrSurvivor, g.PGID, left, wait)
		}
		for _, pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(pollEvery)
	}
}

// The private directories of attempts on this machine are named after the
// executor that made them, so that the next executor can remove those of
// one that died (kill -9 gives no chance to clean up, and they hold
// secrets): "solar-run-PID.START-*".
const tempPrefix = "solar-run-"

var selfTag = sync.OnceValue(func() string {
	pid := os.Getpid()
	st, _ := readStat(pid)
	return strconv.Itoa(pid) + "." + strconv.FormatUint(st.start, 10)
})

// tempParents are where localTempDir makes directories when not told.
func tempParents() []string {
	var out []string
	for _, d := range []string{os.Getenv("XDG_RUNTIME_DIR"), os.Getenv("TMPDIR"), "/dev/shm", os.TempDir()} {
		if filepath.IsAbs(d) {
			out = append(out, d)
		}
	}
	return out
}

// procsFile, in the private directory of an Ansible attempt of an
// earlier solar, recorded the attempt's process group; SweepTemp still
// reads it in what such an executor left. Every attempt now has a slot of
// its run directory's notesFile.
const procsFile = "group.json"

// procsNote is the content of procsFile, and of a slot of notesFile.
type procsNote struct {
	Task  string `json:"task"`
	Procs Procs  `json:"group"`
}

// Swept is an attempt of a dead executor that SweepTemp cleaned up after.
type Swept struct {
	Task   string // the attempt's task, "keystone.run#0"
	Killed int    // processes of its group that were still running
}

// SweepTemp cleans up after executors that are no longer running, in dir
// ("" means every place Local would make a private directory): it kills
// what is left of each of their attempts' process groups, waiting for it
// to be gone, then removes their private directories, which hold secrets.
// A group that will not die is an error (ErrSurvivor); its directory
// stays, so the next sweep tries again. Whatever dir is, the SSH control
// directories of Ansible attempts of dead executors go too, with the
// control masters still running in them (sweepControlDirs).
func SweepTemp(dir string) ([]Swept, error) {
	parents := []string{dir}
	if dir == "" {
		parents = tempParents()
	}
	var out []Swept
	seen := map[string]bool{}
	for _, parent := range parents {
		if seen[parent] {
			continue
		}
		seen[parent] = true
		entries, err := os.ReadDir(parent)
		if err != nil {
			continue
		}
		for _, e := range entries {
			name := e.Name()
			if !e.IsDir() || !strings.HasPrefix(name, tempPrefix) {
				continue
			}
			tag, _, ok := strings.Cut(strings.TrimPrefix(name, tempPrefix), "-")
			if !ok || tag == selfTag() || executorAlive(tag) {
				continue
			}
			path := filepath.Join(parent, name)
			for _, note := range notesIn(path) {
				n, err := KillProcs(note.Procs, survivorWait)
				if err != nil {
					return out, fmt.Errorf("task %s: %w", note.Task, err)
				}
				if n > 0 {
					out = append(out, Swept{Task: note.Task, Killed: n})
				}
			}
			_ = os.RemoveAll(path)
		}
	}
	return out, sweepControlDirs()
}

// survivorWait bounds the wait for a killed group to be gone.
const survivorWait = 10 * time.Second

// executorAlive reports whether the process a "PID.START" tag names still
// runs. An unreadable tag is treated as alive: only what is surely stale
// is removed.
func executorAlive(tag string) bool {
	pidText, startText, ok := strings.Cut(tag, ".")
	pid, err1 := strconv.Atoi(pidText)
	start, err2 := strconv.ParseUint(startText, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		return true
	}
	st, err := readStat(pid)
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	return st.start == start && st.state != 'Z'
}
