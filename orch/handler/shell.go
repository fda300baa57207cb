package handler

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"strconv"
	"time"
)

// Shell runs action scripts with /bin/sh, following the shell protocol of
// the package comment. Its zero value is ready to use.
type Shell struct {
	// Transport reaches the machine of Request.Location; nil is Local.
	Transport Transport
	// TempDir is where each attempt's private directory is made; "" is
	// the host's choice (for Local: $XDG_RUNTIME_DIR when set, else
	// os.TempDir()).
	TempDir string
	// KillGrace is how long a stopped script's process group has between
	// SIGTERM and SIGKILL; 0 is DefaultKillGrace, a negative value sends
	// SIGKILL at once.
	KillGrace time.Duration
}

// DefaultKillGrace is the time a script has to clean up after SIGTERM.
const DefaultKillGrace = 2 * time.Second

// interpreter runs every script. Naming it, rather than executing the
// script, spares bases the executable bit and a #! line.
const interpreter = "/bin/sh"

// errAttemptTimeout is the cause of the attempt's context when
// Request.Timeout passes, which tells it apart from the caller's deadline.
var errAttemptTimeout = errors.New("attempt timed out")

// Run runs one attempt of req's script and reads its result file. See
// Result for what is returned on failure; the error is an *Error, or wraps
// ErrBadRequest when nothing could be started.
func (s *Shell) Run(ctx context.Context, req Request) (Result, error) {
	if err := checkRequest(req); err != nil {
		return Result{}, err
	}
	if ctx.Err() != nil {
		return Result{}, canceled(ctx)
	}
	// Everything a request can get wrong is found before anything is
	// made on the host.
	env, err := scriptEnv(req)
	if err != nil {
		return Result{}, err
	}
	inputs := req.Inputs
	if inputs == nil {
		inputs = map[string]any{}
	}
	inputsJSON, err := appendJSON(nil, inputs)
	if err != nil {
		return Result{}, fmt.Errorf("%w: inputs cannot be written as JSON: %v", ErrBadRequest, err)
	}

	var transport Transport = Local{}
	if s.Transport != nil {
		transport = s.Transport
	}
	host, err := transport.Open(ctx, req.Location)
	if err != nil {
		return Result{}, startFailed(req, err)
	}
	defer host.Close()
	dir, err := host.MkdirTemp(ctx, s.TempDir)
	if err != nil {
		return Result{}, startFailed(req, fmt.Errorf("cannot make a private temp dir: %w", err))
	}
	// The private dir goes even when the caller gave up: it holds secrets.
	defer host.RemoveAll(context.WithoutCancel(ctx), dir)
	inputsPath, resultPath := joinHost(dir, "inputs.json"), joinHost(dir, "result.json")
	if err := host.WriteFile(ctx, inputsPath, inputsJSON); err != nil {
		return Result{}, startFailed(req, fmt.Errorf("cannot write the inputs file: %w", err))
	}
	env = append(env, "SOLAR_INPUTS="+inputsPath, "SOLAR_RESULT="+resultPath)

	attempt := ctx
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		attempt, cancel = context.WithTimeoutCause(ctx, req.Timeout, errAttemptTimeout)
		defer cancel()
	}
	var stdout, stderr tail
	proc, err := host.Start(attempt, Command{
		Path:   interpreter,
		Args:   []string{req.Script},
		Dir:    req.BaseDir,
		Env:    env,
		Stdout: &stdout,
		Stderr: &stderr,
	})
	if err != nil {
		return Result{}, startFailed(req, err)
	}
	exit, stopped, waitErr := s.wait(attempt, proc)

	// The result file is read whatever happened: on failure too, its
	// secret outputs must be masked in what the script printed.
	changed, outputs, resultErr := true, map[string]any(nil), error(nil)
	switch raw, err := host.ReadFile(context.WithoutCancel(ctx), resultPath, resultLimit); {
	case err == nil:
		changed, outputs, resultErr = parseResult(raw)
	case !errors.Is(err, fs.ErrNotExist):
		resultErr = fmt.Errorf("cannot read the result file: %w", err)
	}
	m := secrets(req, outputs)
	res := Result{Stdout: stdout.text(m), Stderr: stderr.text(m)}

	switch {
	case stopped && ctx.Err() != nil:
		return res, canceled(ctx)
	case stopped:
		return res, &Error{Kind: ErrTimeout, ExitCode: -1, Msg: "timed out after " + req.Timeout.String()}
	case waitErr != nil:
		return res, &Error{Kind: ErrFailed, ExitCode: -1, Msg: m.apply("lost the script: " + waitErr.Error())}
	case exit.Signal != "":
		return res, failed(-1, "killed by "+exit.Signal, res.Stderr)
	case exit.Code != 0:
		return res, failed(exit.Code, "exit status "+strconv.Itoa(exit.Code), res.Stderr)
	case resultErr != nil:
		return res, &Error{Kind: ErrBadResult, ExitCode: 0, Msg: m.apply(resultErr.Error())}
	}
	res.Changed, res.Outputs = changed, outputs
	return res, nil
}

// wait waits for the script, stopping its process group when ctx is done
// first; stopped reports that it did.
func (s *Shell) wait(ctx context.Context, proc Process) (exit Exit, stopped bool, err error) {
	if ctx.Done() == nil {
		exit, err = proc.Wait()
		return exit, false, err
	}
	type waited struct {
		exit Exit
		err  error
	}
	done := make(chan waited, 1)
	go func() {
		e, err := proc.Wait()
		done <- waited{e, err}
	}()
	select {
	case w := <-done:
		return w.exit, false, w.err
	case <-ctx.Done():
	}
	select {
	case w := <-done:
		// It finished as time ran out: what it did stands.
		return w.exit, false, w.err
	default:
	}
	grace := s.KillGrace
	if grace == 0 {
		grace = DefaultKillGrace
	}
	stopErr := proc.Stop(grace)
	w := <-done
	return w.exit, true, errors.Join(w.err, stopErr)
}

// checkRequest refuses requests that cannot mean what they say.
func checkRequest(req Request) error {
	switch {
	case !filepath.IsAbs(req.BaseDir):
		return fmt.Errorf("%w: task %s: base dir %q is not absolute", ErrBadRequest, req.Task, req.BaseDir)
	case req.Script == "":
		return fmt.Errorf("%w: task %s: no script for action %q", ErrBadRequest, req.Task, req.Action)
	case filepath.IsAbs(req.Script):
		return fmt.Errorf("%w: task %s: script %q must be relative to the base dir", ErrBadRequest, req.Task, req.Script)
	}
	return nil
}

// joinHost joins a host path. Hosts are POSIX machines, so the separator is
// '/' whatever this machine uses.
func joinHost(dir, name string) string { return path.Join(dir, name) }

// secrets builds the masker of an attempt from its sensitive inputs and
// the outputs named like one.
func secrets(req Request, outputs map[string]any) *masker {
	m := &masker{}
	for name, secret := range req.Sensitive {
		if !secret {
			continue
		}
		m.addValue(req.Inputs[name])
		if v, ok := outputs[name]; ok {
			m.addValue(v)
		}
	}
	m.build()
	return m
}

func canceled(ctx context.Context) error {
	cause := context.Cause(ctx)
	return &Error{Kind: ErrCanceled, ExitCode: -1, Msg: "canceled: " + cause.Error(), cause: cause}
}

func startFailed(req Request, err error) error {
	return &Error{
		Kind:     ErrFailed,
		ExitCode: -1,
		Msg:      fmt.Sprintf("cannot start %s %s in %s: %v", interpreter, req.Script, req.BaseDir, err),
	}
}

// failed is a script that ended badly: what happened, then its stderr tail.
func failed(code int, what, stderr string) error {
	if t := lastLines(stderr); t != "" {
		what += ": " + t
	}
	return &Error{Kind: ErrFailed, ExitCode: code, Msg: what}
}
