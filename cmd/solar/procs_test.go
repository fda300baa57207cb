package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// cmdAlive is "alive PIDFILE": the process whose pid PIDFILE holds runs
// (and is not a zombie). "! alive PIDFILE" waits up to five seconds for
// it to be gone.
func cmdAlive(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: alive PIDFILE")
	}
	pid, err := strconv.Atoi(strings.TrimSpace(ts.ReadFile(args[0])))
	if err != nil {
		ts.Fatalf("alive: %s holds no pid", args[0])
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		up := running(pid)
		switch {
		case up && !neg, !up && neg:
			return
		case !neg:
			ts.Fatalf("process %d is not running", pid)
		case time.Now().After(deadline):
			ts.Fatalf("process %d is still running", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// running reports whether pid is a live process, not a zombie.
func running(pid int) bool {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(raw)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// cmdGroupGone is "groupgone TIMEOUT PGIDFILE DIR": within TIMEOUT no
// live process is left in the process group whose id PGIDFILE holds, and
// DIR is empty (no private directory of an attempt is left in it).
func cmdGroupGone(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: groupgone TIMEOUT PGIDFILE DIR")
	}
	timeout, err := time.ParseDuration(args[0])
	if err != nil {
		ts.Fatalf("groupgone: bad timeout %q", args[0])
	}
	pgid, err := strconv.Atoi(strings.TrimSpace(ts.ReadFile(args[1])))
	if err != nil {
		ts.Fatalf("groupgone: %s holds no pid", args[1])
	}
	dir := ts.MkAbs(args[2])
	deadline := time.Now().Add(timeout)
	for {
		left := groupMembers(pgid)
		entries, _ := os.ReadDir(dir)
		if len(left) == 0 && len(entries) == 0 {
			return
		}
		if time.Now().After(deadline) {
			if len(left) > 0 {
				ts.Fatalf("processes %v of group %d still run after %s", left, pgid, timeout)
			}
			ts.Fatalf("%s still holds %s after %s", args[2], entries[0].Name(), timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// groupMembers lists the live processes of process group pgid.
func groupMembers(pgid int) []int {
	names, _ := filepath.Glob("/proc/[0-9]*")
	var out []int
	for _, name := range names {
		pid, err := strconv.Atoi(filepath.Base(name))
		if err != nil {
			continue
		}
		if pg, err := syscall.Getpgid(pid); err == nil && pg == pgid && running(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// cmdWatchdog is "watchdog [-kill] PIDFILE": the runner whose pid PIDFILE
// holds has a watchdog running (-kill: which is then killed with
// SIGKILL). "! watchdog PIDFILE" waits up to five seconds for it to have
// none.
func cmdWatchdog(ts *testscript.TestScript, neg bool, args []string) {
	kill := len(args) == 2 && args[0] == "-kill"
	if kill {
		args = args[1:]
	}
	if len(args) != 1 || (kill && neg) {
		ts.Fatalf("usage: watchdog [-kill] PIDFILE")
	}
	runner := strings.TrimSpace(ts.ReadFile(args[0]))
	deadline := time.Now().Add(5 * time.Second)
	for {
		pid := watchdogOf(runner)
		switch {
		case pid != 0 && kill:
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				ts.Fatalf("watchdog %d: %v", pid, err)
			}
			return
		case pid != 0 && !neg, pid == 0 && neg:
			return
		case !neg:
			ts.Fatalf("runner %s has no watchdog", runner)
		case time.Now().After(deadline):
			ts.Fatalf("runner %s's watchdog (pid %d) still runs", runner, pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// watchdogOf returns the pid of a live watchdog of runner (its argv:
// sh -c PROGRAM solar-watchdog GRACE RUNNER ...), 0 if there is none.
func watchdogOf(runner string) int {
	names, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, name := range names {
		raw, err := os.ReadFile(name)
		if err != nil {
			continue
		}
		argv := bytes.Split(raw, []byte{0})
		if len(argv) > 5 && string(argv[3]) == "solar-watchdog" && string(argv[5]) == runner {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(name)))
			if running(pid) {
				return pid
			}
		}
	}
	return 0
}
