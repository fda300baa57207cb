package main

import (
	"os"
	"strconv"
	"strings"
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
