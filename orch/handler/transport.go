package handler

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"syscall"
	"time"

	"github.com/solarops/solar/internal/fileread"
)

// Transport reaches the machine an action runs on.
type Transport interface {
	// Open returns the host named location ("" is this machine). The caller
	// closes it when the attempt is over. Its errors are meant for the
	// operator as they are: they name the node and say what to do.
	Open(ctx context.Context, location string) (Host, error)
}

// Host is one machine, as far as the handlers need it: the shell
// protocol's scripts run on it, and Local also runs the Ansible handler's
// ansible-playbook (Attempt.Program).
type Host interface {
	// Exec runs one attempt on the host and waits for it to end. When ctx
	// is done first, the attempt's whole process group is stopped (SIGTERM,
	// then SIGKILL once Attempt.Grace has passed) and Ended.Stopped is set.
	// The error is about the host, not the script: it could not be started,
	// or the host was lost while it ran. Its message is for the operator.
	Exec(ctx context.Context, a Attempt) (Ended, error)
	// Close releases the host; no Exec may be in progress.
	Close() error
}

// Attempt is one run of an action script, as a Host sees it.
type Attempt struct {
	Task    string // the plan instance, "keystone.run#0", for records
	BaseDir string // the base's directory on the controller
	Script  string // relative to BaseDir
	// Env holds the protocol's variables ("KEY=value"): SOLAR_RESOURCE and
	// the other names, and one SOLAR_INPUT_* per input. The host adds
	// SOLAR_INPUTS and SOLAR_RESULT, and the environment of the user it
	// runs as: on this machine the executor's own, on a node its login
	// environment.
	Env []string
	// Inputs is the content of the file SOLAR_INPUTS names.
	Inputs []byte
	// TempDir is where the attempt's private directory is made; "" is the
	// host's choice.
	TempDir string
	// Grace is the time between SIGTERM and SIGKILL when the attempt is
	// stopped; negative sends SIGKILL at once.
	Grace time.Duration
	// Stdout and Stderr receive the script's output until Exec returns,
	// from any goroutine.
	Stdout, Stderr io.Writer
	// Started, if set, is told the attempt's process group once it runs on
	// this machine, so that the caller can record it (see KillProcs). A
	// remote host does not call it: its wrapper ends the group on the node
	// when the connection goes.
	Started func(Procs)
	// Gate, if set, is called just before the script starts; an error
	// stops the attempt there, and Exec returns it (see Request.Gate).
	Gate func() error
	// Key names what the attempt acts on: the resource. A host whose
	// attempts can outlive their caller (a remote one) starts the script
	// only once no earlier attempt of the same Key is left running there,
	// waiting for it or killing it if need be. "" is an attempt that may
	// run beside others: it changes nothing (check mode).
	Key string
	// Note, if set, is told, a line at a time and from any goroutine, what
	// the host did on the attempt's behalf that its log should show: a
	// previous attempt it had to wait for or kill.
	Note func(string)
	// Program, if set, runs instead of Script: a program of this machine
	// that the handler prepares files for (ansible-playbook). Only Local
	// runs one; a remote host refuses the attempt. Inputs is then unused.
	Program *Program
	// Batch says that Inputs is a batch's document (Request.Members): the
	// host also names its file in SOLAR_BATCH. Only a BatchHost is given
	// one.
	Batch bool
}

// ErrGate wraps the error of an attempt's Gate: the script did not start.
var ErrGate = errors.New("not started")

// PassGate calls gate, if any, and wraps its error in ErrGate; transports
// call it just before they start a script.
func PassGate(gate func() error) error {
	if gate == nil {
		return nil
	}
	if err := gate(); err != nil {
		return fmt.Errorf("%w: %w", ErrGate, err)
	}
	return nil
}

// Ended is how an attempt ended.
type Ended struct {
	Exit    Exit
	Stopped bool // ctx was done and the host stopped the process group
	// Result is the content of the result file; nil when the script wrote
	// none. ResultErr says why it could not be read (too large, not a
	// regular file); it never quotes the file.
	Result    []byte
	ResultErr error
}

// Exit is how a command ended.
type Exit struct {
	Code   int    // exit status; -1 when killed by a signal
	Signal string // the signal that killed it, "SIGKILL"; "" when it exited
}

// missingInterpreter explains err, an executable script's failed start,
// when the script is there but the interpreter its #! line names is not:
// the kernel says only "no such file or directory", which reads as if
// the script were missing.
func missingInterpreter(baseDir, script string, err error) error {
	if !errors.Is(err, syscall.ENOENT) {
		return err
	}
	f, openErr := os.Open(filepath.Join(baseDir, script))
	if openErr != nil {
		return err
	}
	defer f.Close()
	var head [256]byte
	n, _ := io.ReadFull(f, head[:])
	line, _, _ := strings.Cut(string(head[:n]), "\n")
	rest, ok := strings.CutPrefix(line, "#!")
	if !ok {
		return err
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return err
	}
	return fmt.Errorf("the interpreter its #! line names, %s, does not exist: %w", fields[0], err)
}

// scriptArgv runs an executable script as written, so that its #! line
// picks the interpreter (bash, python3, ...), and any other under
// /bin/sh, which spares simple bases the executable bit.
func scriptArgv(baseDir, script string) []string {
	path := filepath.Join(baseDir, script)
	if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
		return []string{path}
	}
	return []string{interpreter, script}
}

// localTempDir makes a new 0700 directory in parent, or with no parent
// in the first of tempParents where it can: a run's (runDirUnder). Its
// name says which executor made it, so that one that died is cleaned up
// after by the next (SweepTemp).
func localTempDir(parent string) (string, error) {
	pattern := tempPrefix + selfTag() + "-"
	return inFirstParent(parent, func(p string) (string, error) { return os.MkdirTemp(p, pattern) })
}

// inFirstParent calls try in parent or, with no parent, in each of
// tempParents in turn until it succeeds. The error is the first one.
func inFirstParent[T any](parent string, try func(string) (T, error)) (T, error) {
	parents := []string{parent}
	if parent == "" {
		parents = tempParents()
	}
	var zero T
	err := errors.New("no temp dir to make it in")
	for i, p := range parents {
		v, mkErr := try(p)
		if mkErr == nil {
			return v, nil
		}
		if i == 0 {
			err = mkErr
		}
	}
	return zero, err
}

// createNew creates name exclusively (never writing through a file or link
// someone else put there first), writes data to it and returns it open.
func createNew(name string, data []byte) (int, error) {
	fd, err := syscall.Open(name, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: name, Err: err}
	}
	for len(data) > 0 {
		n, err := syscall.Write(fd, data)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			syscall.Close(fd)
			return -1, &os.PathError{Op: "write", Path: name, Err: err}
		}
		data = data[n:]
	}
	return fd, nil
}

// writeNew creates name exclusively, so that it never writes through a
// file or link someone else put there first.
func writeNew(name string, data []byte) error {
	fd, err := createNew(name, data)
	if err != nil {
		return err
	}
	return syscall.Close(fd)
}

// readRegular reads a file the script wrote (the result file), which solar
// must not trust: see fileread.Read.
func readRegular(name string, limit int64) ([]byte, error) {
	data, err := fileread.Read(name, limit)
	if errors.Is(err, fileread.ErrNotRegular) || errors.Is(err, fileread.ErrTooLarge) {
		return nil, fmt.Errorf("it is %w", err)
	}
	return data, err
}

var signalNames = map[syscall.Signal]string{
	syscall.SIGABRT: "SIGABRT", syscall.SIGALRM: "SIGALRM", syscall.SIGBUS: "SIGBUS",
	syscall.SIGFPE: "SIGFPE", syscall.SIGHUP: "SIGHUP", syscall.SIGILL: "SIGILL",
	syscall.SIGINT: "SIGINT", syscall.SIGKILL: "SIGKILL", syscall.SIGPIPE: "SIGPIPE",
	syscall.SIGQUIT: "SIGQUIT", syscall.SIGSEGV: "SIGSEGV", syscall.SIGTERM: "SIGTERM",
	syscall.SIGUSR1: "SIGUSR1", syscall.SIGUSR2: "SIGUSR2", syscall.SIGXCPU: "SIGXCPU",
	syscall.SIGXFSZ: "SIGXFSZ",
}

// KnownSignal returns the SIG* name of s when it is one a script commonly
// dies of.
func KnownSignal(s syscall.Signal) (string, bool) {
	n, ok := signalNames[s]
	return n, ok
}

func signalName(s syscall.Signal) string {
	if n, ok := signalNames[s]; ok {
		return n
	}
	return "signal " + strconv.Itoa(int(s))
}

// SignalName returns the SIG* name of a signal given by its name without
// the prefix ("TERM", as an SSH server reports it) or with it.
func SignalName(name string) string {
	if name == "" {
		return ""
	}
	if len(name) > 3 && name[:3] == "SIG" {
		return name
	}
	return "SIG" + name
}
