package handler

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"
)

// Shell runs action scripts with /bin/sh, following the shell protocol of
// the package comment. Its zero value is ready to use.
type Shell struct {
	// Transport reaches the machine of Request.Location; nil is a Local
	// shared by every handler given none, never settled (see Local).
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

// interpreter runs scripts without the executable bit (and executable ones
// without a #! line): bases need neither.
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
	if req.Members != nil {
		return s.runBatch(ctx, req)
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

	host, err := s.open(ctx, req.Location)
	if err != nil {
		return Result{}, err
	}
	defer host.Close()

	a := attemptOf(req, s.TempDir, s.KillGrace)
	a.Env, a.Inputs = env, inputsJSON
	return runAttempt(ctx, req, job{host: host, attempt: a, read: scriptOutcome})
}

// scriptOutcome reads a script's result file (see the package comment):
// no file, or one without "changed", means changed.
func scriptOutcome(e Ended) outcome {
	o := outcome{changed: true, err: e.ResultErr}
	if o.err == nil && e.Result != nil {
		o.changed, o.outputs, o.changes, o.err = parseResultChanges(e.Result)
	}
	return o
}

// attemptContext bounds an attempt by req.Timeout, if any.
func attemptContext(ctx context.Context, req Request) (context.Context, context.CancelFunc) {
	if req.Timeout > 0 {
		return context.WithTimeoutCause(ctx, req.Timeout, errAttemptTimeout)
	}
	return ctx, func() {}
}

// killGrace is the configured grace, or the default.
func killGrace(g time.Duration) time.Duration {
	if g == 0 {
		return DefaultKillGrace
	}
	return g
}

// liveOutput passes each line on to req.Output as it is printed, masked
// with the sensitive inputs; nil when nobody listens.
func liveOutput(req Request) func(Line) {
	if req.Output == nil {
		return nil
	}
	early := secrets(req, nil)
	return func(l Line) {
		l.Text = early.apply(l.Text)
		req.Output(l)
	}
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

// secrets builds the masker of an attempt from its sensitive inputs and
// the outputs named like one.
func secrets(req Request, outputs map[string]any) *masker {
	if req.Members != nil {
		return batchSecrets(req.Members, nil)
	}
	m := &masker{}
	m.addSensitive(req.Sensitive, req.Inputs, outputs)
	m.build()
	return m
}

// addSensitive adds the values of the sensitive inputs, and of the outputs
// named like one of them.
func (m *masker) addSensitive(sensitive map[string]bool, inputs, outputs map[string]any) {
	for name, secret := range sensitive {
		if !secret {
			continue
		}
		m.addValue(inputs[name])
		if v, ok := outputs[name]; ok {
			m.addValue(v)
		}
	}
}

func canceled(ctx context.Context) error {
	cause := context.Cause(ctx)
	return &Error{Kind: ErrCanceled, ExitCode: -1, Msg: "canceled: " + cause.Error(), cause: cause}
}

// failed is a script that ended badly: what happened, then its stderr tail.
func failed(code int, what, stderr string) error {
	if t := lastLines(stderr); t != "" {
		what += ": " + t
	}
	return &Error{Kind: ErrFailed, ExitCode: code, Msg: what}
}

// open opens the host of location through the shell's transport (this
// machine when it has none); a failure is the attempt's.
func (s *Shell) open(ctx context.Context, location string) (Host, error) {
	var transport Transport = &defaultLocal
	if s.Transport != nil {
		transport = s.Transport
	}
	host, err := transport.Open(ctx, location)
	if err != nil {
		return nil, &Error{Kind: ErrFailed, ExitCode: -1, Msg: err.Error(), host: err}
	}
	return host, nil
}
