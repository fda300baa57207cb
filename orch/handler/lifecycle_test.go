package handler

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"testing"
	"time"
)

// classify is the one place an attempt's end becomes its error, for every
// handler: each way an attempt ends maps to one kind, exit code and
// message, in a fixed order of precedence.
func TestClassify(t *testing.T) {
	live := context.Background()
	done, cancel := context.WithCancel(context.Background())
	cancel()
	hostErr := errors.New("cannot start run.sh in /b: no s3cret here")
	badResult := errors.New("result file is not valid JSON (error at byte 3)")
	tests := []struct {
		name     string
		ctx      context.Context
		ended    Ended
		hostErr  error
		out      outcome
		program  string
		kind     error // nil: success
		code     int
		msg      string
		wrapHost bool
	}{
		{name: "success", ctx: live},
		{name: "canceled wins over all", ctx: done, ended: Ended{Stopped: true, Exit: Exit{Code: 2}}, hostErr: hostErr,
			kind: ErrCanceled, code: -1, msg: "canceled: context canceled"},
		{name: "timeout", ctx: live, ended: Ended{Stopped: true}, hostErr: hostErr,
			kind: ErrTimeout, code: -1, msg: "timed out after 5s"},
		{name: "host error, masked", ctx: live, hostErr: hostErr, out: outcome{failure: "task failed"},
			kind: ErrFailed, code: -1, msg: "cannot start run.sh in /b: no ******** here", wrapHost: true},
		{name: "the program's own failure", ctx: live, ended: Ended{Exit: Exit{Code: 2}}, out: outcome{failure: "task \"x\" failed: s3cret"}, program: "ansible-playbook ",
			kind: ErrFailed, code: 2, msg: "task \"x\" failed: ********"},
		{name: "signal", ctx: live, ended: Ended{Exit: Exit{Code: -1, Signal: "SIGKILL"}}, out: outcome{err: badResult},
			kind: ErrFailed, code: -1, msg: "killed by SIGKILL: last words"},
		{name: "signal, a program", ctx: live, ended: Ended{Exit: Exit{Code: -1, Signal: "SIGTERM"}}, program: "ansible-playbook ",
			kind: ErrFailed, code: -1, msg: "ansible-playbook killed by SIGTERM: last words"},
		{name: "exit status", ctx: live, ended: Ended{Exit: Exit{Code: 3}}, out: outcome{err: badResult},
			kind: ErrFailed, code: 3, msg: "exit status 3: last words"},
		{name: "exit status, a program", ctx: live, ended: Ended{Exit: Exit{Code: 4}}, program: "ansible-playbook ",
			kind: ErrFailed, code: 4, msg: "ansible-playbook exit status 4: last words"},
		{name: "bad result", ctx: live, out: outcome{err: badResult},
			kind: ErrBadResult, code: 0, msg: badResult.Error()},
	}
	req := Request{Timeout: 5 * time.Second, Inputs: map[string]any{"pw": "s3cret"}, Sensitive: map[string]bool{"pw": true}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := classify(tt.ctx, req, tt.ended, tt.hostErr, tt.out, tt.program, "last words\n", secrets(req, nil))
			if tt.kind == nil {
				if err != nil {
					t.Fatalf("classify = %v, want success", err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("classify = %v, want an *Error", err)
			}
			if e.Kind != tt.kind || e.ExitCode != tt.code || e.Msg != tt.msg {
				t.Errorf("classify = {%v %d %q}, want {%v %d %q}", e.Kind, e.ExitCode, e.Msg, tt.kind, tt.code, tt.msg)
			}
			if got := errors.Is(err, hostErr); got != tt.wrapHost {
				t.Errorf("errors.Is(err, the host's error) = %v, want %v", got, tt.wrapHost)
			}
		})
	}
}

// A remote host refuses a Program attempt; Local runs it, with the
// attempt's own directory and token, and removes the directory after.
func TestLocalRunsAProgram(t *testing.T) {
	parent := t.TempDir()
	local := &Local{}
	t.Cleanup(local.Settle)
	var dir, token string
	done := false
	ended, err := local.Exec(context.Background(), Attempt{
		Task: "p.run#0", BaseDir: t.TempDir(), TempDir: parent, Grace: testGrace,
		Program: &Program{Name: "sh", Prepare: func(d, tok string) (Prepared, error) {
			dir, token = d, tok
			return Prepared{
				Argv:   []string{interpreter, "-c", `[ "$SOLAR_ATTEMPT_ID" = "$1" ] && printf ok >"$2"`, "sh", tok, d + "/result"},
				Result: d + "/result",
				Done:   func() { done = true },
			}, nil
		}},
	})
	if err != nil || ended.Exit.Code != 0 {
		t.Fatalf("Exec = %+v, %v", ended, err)
	}
	if string(ended.Result) != "ok" || token == "" {
		t.Errorf("result %q (token %q), want the program to see its token", ended.Result, token)
	}
	if !done {
		t.Error("Prepared.Done was not called")
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the attempt's directory %s is still there (%v)", dir, err)
	}
}
