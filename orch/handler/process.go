package handler

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// program is a program to run on this machine, in a process group of its
// own whose leader dies with the executor (the rest of the group, once
// noted in a run directory, by that directory's watchdog).
type program struct {
	argv []string // argv[0] is the program's path
	// noExec, if set, is run instead when the kernel cannot run argv[0]
	// itself (ENOEXEC: an executable without a #! line).
	noExec []string
	dir    string
	env    []string
	// stdout and stderr receive the program's output, on the goroutine
	// that waits for it; nil discards it.
	stdout, stderr io.Writer
}

// process is a started program. One goroutine, the one that started it,
// copies its output and waits for its end, by polling the output pipes
// and a pidfd of the process together: a script costs no goroutine and no
// hand-off between goroutines of its own, which would wake the runtime's
// idle threads several times per task (docs/performance.md).
type process struct {
	pid   int
	pidfd int    // readable once the process has exited; -1: see exitPipe
	out   [2]int // solar's ends of the stdout and stderr pipes; -1 once closed
	// exitPipe stands in for the pidfd where the kernel gives none: a
	// goroutine waiting for the process closes its write end.
	exitPipe int
	w        [2]io.Writer
}

// pollEvery is how often a stop looks whether the process group is gone.
const pollEvery = 10 * time.Millisecond

// ioGrace bounds how long a process's output is read once it has exited:
// a background child that keeps stdout open must not hold the attempt
// forever.
const ioGrace = time.Second

// pidfdWorks reports whether the kernel gives pidfds that poll can wait
// on (Linux 5.3 and later).
var pidfdWorks = sync.OnceValue(func() bool {
	fd, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		return false
	}
	unix.Close(fd)
	return true
})

// devNull is /dev/null, opened once for every program's stdin.
var devNull = sync.OnceValues(func() (int, error) {
	return syscall.Open(os.DevNull, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
})

// start starts p. It locks the calling goroutine to its OS thread, which
// wait unlocks: the kernel sends the parent-death signal when the thread
// that forked the child exits, not the process, so that thread must live
// as long as the child is ours. The caller must call wait on the same
// goroutine once start succeeded.
func start(p program) (*process, error) {
	in, err := devNull()
	if err != nil {
		return nil, fmt.Errorf("cannot open %s: %w", os.DevNull, err)
	}
	pr := &process{pidfd: -1, out: [2]int{-1, -1}, exitPipe: -1, w: [2]io.Writer{p.stdout, p.stderr}}
	var theirs [2]int
	for i := range pr.out {
		var fds [2]int
		if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
			pr.closePipes()
			closeFds(theirs[:i])
			return nil, fmt.Errorf("cannot make an output pipe: %w", err)
		}
		pr.out[i], theirs[i] = fds[0], fds[1]
	}
	usePidfd := pidfdWorks()
	attr := &syscall.ProcAttr{
		Dir:   p.dir,
		Env:   lastWins(p.env),
		Files: []uintptr{uintptr(in), uintptr(theirs[0]), uintptr(theirs[1])},
		// The program dies with the executor: kill -9 of solar must not
		// leave it running beside the copy that resume starts.
		Sys: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	}
	if usePidfd {
		attr.Sys.PidFD = &pr.pidfd
	}
	runtime.LockOSThread()
	argv := p.argv
	pr.pid, err = syscall.ForkExec(argv[0], argv, attr)
	if errors.Is(err, syscall.ENOEXEC) && p.noExec != nil {
		argv = p.noExec
		pr.pid, err = syscall.ForkExec(argv[0], argv, attr)
	}
	closeFds(theirs[:])
	if err != nil {
		runtime.UnlockOSThread()
		pr.closePipes()
		pr.closeWatch()
		return nil, &os.PathError{Op: "fork/exec", Path: argv[0], Err: err}
	}
	if !usePidfd {
		pr.watchExit()
	}
	return pr, nil
}

// lastWins drops the earlier of two settings of the same variable, as
// os/exec does: a variable solar sets after those it inherited is the one
// the program sees, whichever of the two its getenv would find first.
func lastWins(env []string) []string {
	at := make(map[string]int, len(env))
	dup := false
	for i, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := at[k]; ok {
			dup = true
		}
		at[k] = i
	}
	if !dup {
		return env
	}
	out := make([]string, 0, len(at))
	for i, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if at[k] == i {
			out = append(out, kv)
		}
	}
	return out
}

// watchExit makes exitPipe, whose read end hangs up once the process has
// exited (without reaping it: wait does).
func (pr *process) watchExit() {
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
		// Without it, wait reaps the process blocking, once the output
		// is closed.
		return
	}
	pr.exitPipe = fds[0]
	go func(pid, w int) {
		var info unix.Siginfo
		for unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil) == unix.EINTR {
		}
		unix.Close(w)
	}(pr.pid, fds[1])
}

// wait copies the process's output to its writers until the process has
// exited and its output is closed (or ioGrace has passed since it
// exited), reaps it and unlocks the thread. When ctx is done first, it
// stops the process group (SIGTERM, then SIGKILL once grace has passed;
// at once when grace is negative) and Ended.Stopped is set.
func (pr *process) wait(ctx context.Context, grace time.Duration) (Ended, error) {
	defer runtime.UnlockOSThread()
	stop := pr.stopOn(ctx, grace)
	exit, err := pr.copyAndReap()
	stopped, stopErr := stop()
	// The stop looks at the exit watch: it is closed once the stop is over.
	pr.closeWatch()
	return Ended{Exit: exit, Stopped: stopped}, errors.Join(err, stopErr)
}

// stopOn stops the process group once ctx is done, unless the process
// has exited by then. The function it returns says whether it did, once
// the stop is over.
func (pr *process) stopOn(ctx context.Context, grace time.Duration) func() (bool, error) {
	var (
		stopped atomic.Bool
		err     error
		done    = make(chan struct{})
	)
	cancel := context.AfterFunc(ctx, func() {
		defer close(done)
		if pr.exited() {
			// It finished as time ran out: what it did stands.
			return
		}
		stopped.Store(true)
		err = stopProcs(pr.pid, grace)
	})
	return func() (bool, error) {
		if cancel() {
			return false, nil
		}
		<-done
		return stopped.Load(), err
	}
}

// exitFd is what becomes readable once the process has exited: its pidfd,
// else the exit pipe; -1 when there is neither.
func (pr *process) exitFd() int {
	if pr.pidfd >= 0 {
		return pr.pidfd
	}
	return pr.exitPipe
}

// exited reports, without waiting, whether the process has exited.
func (pr *process) exited() bool {
	fd := pr.exitFd()
	if fd < 0 {
		return false
	}
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n > 0
}

// copyBufs are the buffers output is read into.
var copyBufs = sync.Pool{New: func() any { return new([32 << 10]byte) }}

// copyAndReap is wait's loop: one poll over the output pipes and the
// process's exit, until all three are done.
func (pr *process) copyAndReap() (Exit, error) {
	buf := copyBufs.Get().(*[32 << 10]byte)
	defer copyBufs.Put(buf)
	defer pr.closePipes()
	fds := []unix.PollFd{
		{Fd: int32(pr.out[0]), Events: unix.POLLIN},
		{Fd: int32(pr.out[1]), Events: unix.POLLIN},
		{Fd: int32(pr.exitFd()), Events: unix.POLLIN},
	}
	var (
		exit     Exit
		reaped   bool
		deadline time.Time
	)
	for fds[0].Fd >= 0 || fds[1].Fd >= 0 || !reaped {
		timeout := -1
		switch {
		case reaped:
			left := time.Until(deadline)
			if left <= 0 {
				return exit, nil
			}
			timeout = int((left + time.Millisecond - 1) / time.Millisecond)
		case fds[2].Fd < 0:
			// No way to learn of the exit but reaping it: once the
			// output is closed, that is all there is left.
			if fds[0].Fd < 0 && fds[1].Fd < 0 {
				exit, err := pr.reap()
				return exit, err
			}
		}
		if _, err := unix.Poll(fds, timeout); err != nil {
			if err == unix.EINTR {
				continue
			}
			pr.closePipes()
			if reaped {
				return exit, nil
			}
			exit, rerr := pr.reap()
			return exit, errors.Join(fmt.Errorf("cannot wait for the output: %w", err), rerr)
		}
		for i := 0; i < 2; i++ {
			if fds[i].Fd < 0 || fds[i].Revents == 0 {
				continue
			}
			n, err := unix.Read(int(fds[i].Fd), buf[:])
			if n > 0 && pr.w[i] != nil {
				_, _ = pr.w[i].Write(buf[:n])
			}
			if n == 0 || (err != nil && err != unix.EINTR && err != unix.EAGAIN) {
				fds[i].Fd = -1
			}
		}
		if fds[2].Fd >= 0 && fds[2].Revents != 0 {
			fds[2].Fd = -1
			var err error
			if exit, err = pr.reap(); err != nil {
				return exit, err
			}
			reaped, deadline = true, time.Now().Add(ioGrace)
		}
	}
	return exit, nil
}

// reap waits for the process and says how it ended.
func (pr *process) reap() (Exit, error) {
	var ws syscall.WaitStatus
	for {
		_, err := syscall.Wait4(pr.pid, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return Exit{Code: -1}, fmt.Errorf("wait: %w", err)
		}
		break
	}
	if ws.Signaled() {
		return Exit{Code: -1, Signal: signalName(ws.Signal())}, nil
	}
	return Exit{Code: ws.ExitStatus()}, nil
}

// closePipes closes solar's ends of the output pipes.
func (pr *process) closePipes() {
	closeFds(pr.out[:])
	pr.out = [2]int{-1, -1}
}

// closeWatch closes what tells of the process's exit.
func (pr *process) closeWatch() {
	closeFds([]int{pr.pidfd, pr.exitPipe})
	pr.pidfd, pr.exitPipe = -1, -1
}

func closeFds(fds []int) {
	for _, fd := range fds {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}

// stopProcs ends process group pgid: SIGTERM, then SIGKILL once grace has
// passed with some of it still alive (at once when grace is negative).
func stopProcs(pgid int, grace time.Duration) error {
	if grace >= 0 {
		if err := syscall.Kill(-pgid, syscall.SIGTERM); err != nil {
			return ignoreGone(err)
		}
		deadline := time.Now().Add(grace)
		for time.Now().Before(deadline) {
			if syscall.Kill(-pgid, 0) == syscall.ESRCH {
				return nil
			}
			time.Sleep(pollEvery)
		}
	}
	return ignoreGone(syscall.Kill(-pgid, syscall.SIGKILL))
}

// ignoreGone treats a process group that no longer exists as stopped.
func ignoreGone(err error) error {
	if err == syscall.ESRCH {
		return nil
	}
	return err
}
