package handler

import (
	"context"
	"io"
	"strconv"
	"time"
)

// The lifecycle of an attempt, the same for every handler that runs
// something: the handler checks the request and prepares what the host
// runs (a script and its variables for Shell, ansible-playbook and its
// files for Ansible), then runAttempt bounds it by its timeout, runs it
// on the host, collects its output, reads its result with the handler's
// reader, masks secrets and classifies its end (classify), in one place.

// job is one attempt as a handler prepared it for runAttempt.
type job struct {
	host Host
	// attempt is what the host runs; runAttempt fills in its output
	// writers, Started, Gate and Note from the request.
	attempt Attempt
	// program starts the messages about the program's own end: "" for a
	// script ("exit status 2"), "ansible-playbook " for a playbook
	// ("ansible-playbook exit status 2").
	program string
	// read turns the result the host brought back into the attempt's
	// outcome. It is called whatever happened, so that outputs named
	// like a secret input are masked on failure too.
	read func(Ended) outcome
}

// outcome is what an attempt's result says.
type outcome struct {
	changed bool
	outputs map[string]any // canonical, unmasked; may be nil
	changes []string       // what the result says differs (Result.Changes)
	// failure is the failure the program reported itself, worded for the
	// operator and not yet masked (an Ansible task's); "" when none.
	failure string
	// members are a batch's results (batch.go); nil for an attempt that is
	// not one, or whose result file said nothing usable.
	members map[string]MemberResult
	// err says why the result cannot be used (ErrBadResult); it never
	// quotes the result.
	err error
}

// attemptOf is what every handler's attempt of req has in common: where
// its files go (tempDir), how long a stopped attempt is given (grace, or
// the default), and its key. A check-mode attempt has no key: it changes
// nothing, so it need not wait for an earlier attempt of its resource.
func attemptOf(req Request, tempDir string, grace time.Duration) Attempt {
	a := Attempt{Task: req.Task, BaseDir: req.BaseDir, Script: req.Script, TempDir: tempDir, Grace: killGrace(grace), Key: req.Resource}
	if req.Check {
		a.Key = ""
	}
	return a
}

// runAttempt runs j on its host and returns what it printed and how it
// ended (see Result and classify).
func runAttempt(ctx context.Context, req Request, j job) (Result, error) {
	attempt, cancel := attemptContext(ctx, req)
	defer cancel()
	var stdout, stderr tail
	log := newLineLog(liveOutput(req))
	a := j.attempt
	a.Stdout = io.MultiWriter(&stdout, log.stream('o'))
	a.Stderr = io.MultiWriter(&stderr, log.stream('e'))
	a.Started, a.Gate, a.Note = req.Started, req.Gate, log.note
	ended, hostErr := j.host.Exec(attempt, a)

	out := j.read(ended)
	m := secrets(req, out.outputs)
	if req.Members != nil {
		m = batchSecrets(req.Members, out.members)
	}
	res := Result{Stdout: stdout.text(m), Stderr: stderr.text(m), Log: log.lines(m.apply)}
	res.Members = out.usableMembers(ended, hostErr, m)
	if err := classify(ctx, req, ended, hostErr, out, j.program, res.Stderr, m); err != nil {
		return res, err
	}
	res.Changed, res.Outputs, res.Changes = out.changed, out.outputs, out.changes
	return res, nil
}

// classify says how an attempt ended, for every handler alike: nil when it
// succeeded, else an *Error. In order: stopped because the caller's
// context was done (ErrCanceled) or because Request.Timeout passed
// (ErrTimeout); failed by the host (it could not start the program, its
// gate refused, the program or the node was lost); failed as the program
// itself reported (out.failure); killed by a signal; a non-zero exit
// status; a result that cannot be used (ErrBadResult). Messages are masked
// with m; stderr is the attempt's masked stderr, whose last lines follow
// a bad exit.
func classify(ctx context.Context, req Request, e Ended, hostErr error, out outcome, program, stderr string, m *masker) error {
	exit := e.Exit
	switch {
	case e.Stopped && ctx.Err() != nil:
		return canceled(ctx)
	case e.Stopped:
		return &Error{Kind: ErrTimeout, ExitCode: -1, Msg: "timed out after " + req.Timeout.String()}
	case hostErr != nil:
		return &Error{Kind: ErrFailed, ExitCode: -1, Msg: m.apply(hostErr.Error()), host: hostErr}
	case out.failure != "":
		return &Error{Kind: ErrFailed, ExitCode: exit.Code, Msg: m.apply(out.failure)}
	case exit.Signal != "":
		return failed(-1, program+"killed by "+exit.Signal, stderr)
	case exit.Code != 0:
		return failed(exit.Code, program+"exit status "+strconv.Itoa(exit.Code), stderr)
	case out.err != nil:
		return &Error{Kind: ErrBadResult, ExitCode: 0, Msg: m.apply(out.err.Error())}
	}
	return nil
}
