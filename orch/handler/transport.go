package handler

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// Transport reaches the machine an action runs on.
type Transport interface {
	// Open returns the host named location ("" is this machine). The caller
	// closes it when the attempt is over.
	Open(ctx context.Context, location string) (Host, error)
}

// Host is one machine, as far as the shell protocol needs it: a place to
// start commands and to keep the attempt's private files. Paths are the
// host's own.
type Host interface {
	// Start starts cmd in a process group of its own, so that Process.Stop
	// reaches everything it starts.
	Start(ctx context.Context, cmd Command) (Process, error)
	// MkdirTemp makes a new directory only the current user can enter
	// (0700) under parent ("" is the host's temp dir) and returns its path.
	MkdirTemp(ctx context.Context, parent string) (string, error)
	// WriteFile creates name, which must not exist, with mode 0600.
	WriteFile(ctx context.Context, name string, data []byte) error
	// ReadFile reads the regular file name. It fails with an error wrapping
	// fs.ErrNotExist when there is no such file, and refuses files larger
	// than limit bytes and anything that is not a regular file.
	ReadFile(ctx context.Context, name string, limit int64) ([]byte, error)
	// RemoveAll removes path and everything below it.
	RemoveAll(ctx context.Context, path string) error
	// Close releases the host; its processes must have been waited for.
	Close() error
}

// Command is a command for Host.Start.
type Command struct {
	Path string   // the program, "/bin/sh"
	Args []string // its arguments, after the program name
	Dir  string   // working directory
	Env  []string // the whole environment, "KEY=value"
	// Stdout and Stderr receive the command's output. They are written
	// from other goroutines until Process.Wait returns.
	Stdout, Stderr io.Writer
}

// Process is a started command.
type Process interface {
	// Wait waits for the command to exit. Its error is about waiting
	// itself; how the command ended is in Exit.
	Wait() (Exit, error)
	// Stop ends the command and everything in its process group: SIGTERM,
	// then SIGKILL once grace has passed with some of them still alive
	// (at once when grace is negative). It may be called while Wait is
	// blocked in another goroutine, and returns when the group is gone or
	// has been sent SIGKILL.
	Stop(grace time.Duration) error
}

// Exit is how a command ended.
type Exit struct {
	Code   int    // exit status; -1 when killed by a signal
	Signal string // the signal that killed it, "SIGKILL"; "" when it exited
}

// Local runs commands on this machine, whatever the location. It is the
// default Transport and is also its own Host.
type Local struct{}

// ioGrace bounds how long Wait waits for the command's output once it has
// exited: a background child that keeps stdout open must not hold the
// attempt forever.
const ioGrace = time.Second

// pollEvery is how often Stop looks whether the process group is gone.
const pollEvery = 10 * time.Millisecond

// Open returns Local itself: there is only one local machine.
func (Local) Open(context.Context, string) (Host, error) { return Local{}, nil }

// Start starts cmd with Setpgid, so its pid is also its process group id.
func (Local) Start(_ context.Context, c Command) (Process, error) {
	cmd := exec.Command(c.Path, c.Args...)
	cmd.Dir = c.Dir
	cmd.Env = c.Env
	cmd.Stdout = c.Stdout
	cmd.Stderr = c.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = ioGrace
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &localProcess{cmd: cmd}, nil
}

// MkdirTemp uses os.MkdirTemp, which creates the directory with mode 0700.
// With no parent it prefers $XDG_RUNTIME_DIR: a tmpfs only the user can
// enter, so secrets in the inputs file never reach a disk, and the files of
// an attempt cost a fraction of what they cost on a disk-backed /tmp (see
// BenchmarkShell). Where that dir is unusable (a session's dir after su),
// An explicit $TMPDIR comes next, then /dev/shm (the tmpfs every Linux has;
// the attempt's dir in it is still 0700), then os.TempDir().
func (Local) MkdirTemp(_ context.Context, parent string) (string, error) {
	if parent != "" {
		return os.MkdirTemp(parent, "solar-")
	}
	candidates := []string{os.Getenv("XDG_RUNTIME_DIR"), os.Getenv("TMPDIR"), "/dev/shm"}
	for _, fast := range candidates {
		if filepath.IsAbs(fast) {
			if dir, err := os.MkdirTemp(fast, "solar-"); err == nil {
				return dir, nil
			}
		}
	}
	return os.MkdirTemp("", "solar-")
}

// WriteFile creates name exclusively, so that it never writes through a
// file or link someone else put there first.
func (Local) WriteFile(_ context.Context, name string, data []byte) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// ReadFile opens name without blocking, so that a FIFO left in its place
// cannot hang the caller, then insists on a regular file.
func (Local) ReadFile(_ context.Context, name string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s)", name, st.Mode().Type())
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", name, limit)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err == nil && int64(len(data)) > limit {
		err = fmt.Errorf("%s is larger than %d bytes", name, limit)
	}
	return data, err
}

// RemoveAll is os.RemoveAll.
func (Local) RemoveAll(_ context.Context, path string) error { return os.RemoveAll(path) }

// Close does nothing.
func (Local) Close() error { return nil }

type localProcess struct {
	cmd *exec.Cmd
}

func (p *localProcess) Wait() (Exit, error) {
	err := p.cmd.Wait()
	st := p.cmd.ProcessState
	if st == nil {
		return Exit{Code: -1}, err
	}
	var exit Exit
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		exit = Exit{Code: -1, Signal: signalName(ws.Signal())}
	} else {
		exit = Exit{Code: st.ExitCode()}
	}
	// How the command ended is in exit; an ExitError says the same again,
	// and ErrWaitDelay only says a leftover child kept the output open.
	var ee *exec.ExitError
	if errors.As(err, &ee) || errors.Is(err, exec.ErrWaitDelay) {
		err = nil
	}
	return exit, err
}

func (p *localProcess) Stop(grace time.Duration) error {
	pgid := p.cmd.Process.Pid
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

var signalNames = map[syscall.Signal]string{
	syscall.SIGABRT: "SIGABRT", syscall.SIGALRM: "SIGALRM", syscall.SIGBUS: "SIGBUS",
	syscall.SIGFPE: "SIGFPE", syscall.SIGHUP: "SIGHUP", syscall.SIGILL: "SIGILL",
	syscall.SIGINT: "SIGINT", syscall.SIGKILL: "SIGKILL", syscall.SIGPIPE: "SIGPIPE",
	syscall.SIGQUIT: "SIGQUIT", syscall.SIGSEGV: "SIGSEGV", syscall.SIGTERM: "SIGTERM",
	syscall.SIGUSR1: "SIGUSR1", syscall.SIGUSR2: "SIGUSR2", syscall.SIGXCPU: "SIGXCPU",
	syscall.SIGXFSZ: "SIGXFSZ",
}

func signalName(s syscall.Signal) string {
	if n, ok := signalNames[s]; ok {
		return n
	}
	return "signal " + strconv.Itoa(int(s))
}
