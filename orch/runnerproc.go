package orch

import (
	"os"
	"strconv"
	"sync"
	"syscall"

	"github.com/solarops/solar/internal/proc"
	"golang.org/x/sys/unix"
)

// A stop request is a record in the store (Stop), which the runner reads
// wherever it runs. A signal only hurries a runner that cannot be told by
// the store at once (a bbolt file: no notifications), and only when the
// process is certainly the runner: the pid is recorded with its host and
// its start time, and a pid of another host, or of this host but started
// at another time (the runner is gone and its pid reused), is never sent
// anything.

// selfStart is this process's start time as proc.Start reads it, 0 when
// unknown: what its runner records carry.
var selfStart = sync.OnceValue(func() int64 {
	start, _, _ := proc.Start(os.Getpid())
	return start
})

// ownProc reports whether /proc shows this process's own pid namespace:
// a process in a pid namespace of its own (unshare --pid, a container)
// may see its parent's /proc, whose pids are not the ones kill takes.
func ownProc() bool {
	self, err := os.Readlink("/proc/self")
	return err == nil && self == strconv.Itoa(os.Getpid())
}

// isRunnerHere reports whether rr names a live process of this machine
// that is the runner that wrote it: the host, the pid and the start time
// all match, it is not a zombie, and this process's /proc and kill see
// the same pids. A record without a start time (a runner of an older
// solar) never matches.
func (rr runnerRecord) isRunnerHere() bool {
	if rr.Host != hostname || rr.PID <= 0 || rr.ProcStart <= 0 || !ownProc() {
		return false
	}
	start, zombie, ok := proc.Start(rr.PID)
	return ok && !zombie && start == rr.ProcStart
}

// signalRunner sends SIGTERM to rr's process if it is the runner
// (isRunnerHere), and reports whether it did. The process is held by a
// pidfd before it is checked: if its pid is reused after the check, the
// signal goes to the process checked, which has ended, and to no other.
func signalRunner(rr runnerRecord) bool {
	if rr.PID <= 0 {
		return false
	}
	fd, err := unix.PidfdOpen(rr.PID, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	if !rr.isRunnerHere() {
		return false
	}
	return unix.PidfdSendSignal(fd, syscall.SIGTERM, nil, 0) == nil
}
