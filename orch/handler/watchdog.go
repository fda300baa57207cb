package handler

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Each run directory has a watchdog: a small /bin/sh program, started with
// the directory, that ends the directory's running attempts when the
// executor dies. The parent-death signal kills only a script's leader; the
// children it started would live on, reparented to init, until a later
// runner swept them, changing the machine with no runner watching.
//
// The watchdog reads a pipe whose write end only the executor holds
// (close-on-exec, so no script inherits it), and the run directory's notes
// file through a descriptor of its own (so it reads it even if the
// directory was removed from under it). It is in a session of its own, has
// no parent-death signal and ignores SIGINT, SIGTERM and SIGHUP: Ctrl-C
// to the terminal, or a kill of the runner, does not end it first. When
// the pipe ends:
//
//   - after the line "end" (the executor let the directory go: every
//     attempt in it had ended), it exits;
//   - otherwise the executor died: it ends every group still noted in the
//     notes file as KillProcs finds them (the group id with a start time no
//     earlier than the note's, or the attempt's token in the environment;
//     nothing of another boot), with SIGTERM, the grace, then SIGKILL until
//     they are gone; then it removes the run directory (inputs, with
//     secrets) and the executor's SSH control directories of Ansible
//     attempts (<shortTempRoot>/solar-cp-<pid>-*), and exits. Should a
//     process outlive SIGKILL for 20 s, it leaves the directory for the
//     next runner's sweep (SweepTemp), which tries again and reports it.
//
// A script that exited cleared its slot: what it left running (a service
// it started) is not the watchdog's. It costs one fork and exec per run
// directory, none per attempt.
//
// Only solar's own data reaches the program, as argv and through the
// notes file, whose groups it reads with a pattern that takes digits and
// hex only; the task names there are never evaluated.
const watchdogProgram = `
trap '' INT TERM HUP
IFS= read -r word
[ "$word" = end ] && exit 0
grace=$1 runner=$2 dir=$3 cproot=$4
read -r boot </proc/sys/kernel/random/boot_id || boot=
groups= tokens=
for n in $(tr '\0' '\n' <&3 | sed -n 's/.*"group":{"pgid":\([0-9]*\),"start":\([0-9]*\),"boot":"\([0-9a-f-]*\)"\(,"token":"\([0-9a-f]*\)"\)\{0,1\}[^{}]*}}$/\1:\2:\3:\5/p'); do
	pg=${n%%:*} n=${n#*:}
	st=${n%%:*} n=${n#*:}
	bt=${n%%:*} tk=${n#*:}
	[ -n "$boot" ] && [ "$bt" = "$boot" ] || continue
	[ "$pg" -gt 1 ] && groups="$groups $pg:$st"
	[ -n "$tk" ] && tokens="$tokens -e SOLAR_ATTEMPT_ID=$tk"
done
members() {
	[ -n "$groups" ] && for d in /proc/[0-9]*; do
		p=${d#/proc/}
		[ "$p" = "$$" ] && continue
		read -r s 2>/dev/null <"$d/stat" || continue
		set -- ${s##*") "}
		[ "$1" = Z ] && continue
		for g in $groups; do
			if [ "$3" = "${g%:*}" ] && [ "${20}" -ge "${g#*:}" ]; then
				echo "$p"
				break
			fi
		done
	done
	[ -n "$tokens" ] && grep -lzxF $tokens /proc/[0-9]*/environ 2>/dev/null | sed -n 's,^/proc/\([0-9]*\)/environ$,\1,p'
	:
}
pids=$(members)
if [ -n "$pids" ] && [ "$grace" -ge 0 ]; then
	kill -TERM $pids 2>/dev/null
	waited=0
	while [ -n "$pids" ] && [ "$waited" -lt "$grace" ]; do
		sleep 0.1
		waited=$((waited + 100))
		pids=$(members)
	done
fi
tries=0
while [ -n "$pids" ]; do
	kill -KILL $pids 2>/dev/null
	tries=$((tries + 1))
	[ "$tries" -le 200 ] || exit 1
	sleep 0.1
	pids=$(members)
done
rm -rf -- "$dir" "$cproot/solar-cp-$runner-"*
`

// watchdogName is the watchdog's $0, which ps shows.
const watchdogName = "solar-watchdog"

// watchdog is a run directory's watchdog, as the executor sees it.
type watchdog struct {
	pid int
	w   int // the executor's end of the pipe; -1 once closed
}

// startWatchdog starts the watchdog of run directory dir, whose notes file
// is notes; grace is the time between SIGTERM and SIGKILL (negative:
// SIGKILL at once).
func startWatchdog(dir, notes string, grace time.Duration) (*watchdog, error) {
	in, err := devNull()
	if err != nil {
		return nil, fmt.Errorf("cannot open %s: %w", os.DevNull, err)
	}
	nf, err := syscall.Open(notes, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: notes, Err: err}
	}
	defer syscall.Close(nf)
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
		return nil, fmt.Errorf("cannot make the watchdog's pipe: %w", err)
	}
	ms := grace.Milliseconds()
	if grace < 0 {
		ms = -1
	}
	argv := []string{interpreter, "-c", watchdogProgram, watchdogName,
		strconv.FormatInt(ms, 10), strconv.Itoa(os.Getpid()), dir, shortTempRoot()}
	// Nothing of the executor's environment but where the tools are: the
	// watchdog must not carry an attempt's token, and tr, sed, grep and
	// sleep must be found even under a bare PATH.
	path := "/usr/bin:/bin"
	if p := os.Getenv("PATH"); p != "" {
		path = p + ":" + path
	}
	env := []string{"LC_ALL=C", "PATH=" + path}
	pid, err := syscall.ForkExec(argv[0], argv, &syscall.ProcAttr{
		Dir:   "/",
		Env:   env,
		Files: []uintptr{uintptr(fds[0]), uintptr(in), uintptr(in), uintptr(nf)},
		// Its own session: a signal to the runner's process group (Ctrl-C
		// at the terminal) does not reach it. No parent-death signal: it
		// must outlive the executor.
		Sys: &syscall.SysProcAttr{Setsid: true},
	})
	syscall.Close(fds[0])
	if err != nil {
		syscall.Close(fds[1])
		return nil, fmt.Errorf("cannot start the watchdog of %s: %w", filepath.Base(dir), err)
	}
	return &watchdog{pid: pid, w: fds[1]}, nil
}

// end tells the watchdog that the executor let its directory go: it exits
// at once. It reports whether it told it now (not before): the caller
// then has it reaped (runDirs.reapWatchdogs).
func (wd *watchdog) end() bool {
	if wd == nil || wd.w < 0 {
		return false
	}
	_, _ = syscall.Write(wd.w, []byte("end\n"))
	_ = syscall.Close(wd.w)
	wd.w = -1
	return true
}

// reapWatchdogs waits for the watchdogs told to end. It takes a
// millisecond or so (a shell reading a line), and once it returns no
// watchdog holds a run directory's notes file open any more (a file
// system holding it can be unmounted).
func (d *runDirs) reapWatchdogs() {
	d.mu.Lock()
	pids := d.watchdogs
	d.watchdogs = nil
	d.mu.Unlock()
	for _, pid := range pids {
		var ws syscall.WaitStatus
		for {
			if _, err := syscall.Wait4(pid, &ws, 0, nil); err != syscall.EINTR {
				break
			}
		}
	}
}
