package handler

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// An attempt costs no goroutine of its own: the caller's goroutine starts
// the script, copies both of its streams and waits for it. Each goroutine
// an attempt hands off to wakes the runtime's idle threads again, which
// was most of solar's own CPU per task.
func TestAttemptRunsOnTheCallersGoroutine(t *testing.T) {
	req := newRequest(t, "echo out; echo err >&2; sleep 0.3; echo more")
	defaultLocal.Settle()
	before := runtime.NumGoroutine()
	during := -1
	req.Output = func(l Line) {
		if during < 0 {
			during = runtime.NumGoroutine()
		}
	}
	res, err := newShell(t).Run(context.Background(), req)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Stdout != "out\nmore\n" || res.Stderr != "err\n" {
		t.Errorf("stdout %q, stderr %q", res.Stdout, res.Stderr)
	}
	// One more is allowed: the timer that removes an earlier attempt's
	// directory may be running.
	if during < 0 || during > before+1 {
		t.Errorf("%d goroutines while the script ran, %d before: an attempt started goroutines of its own", during, before)
	}
}

// Where the kernel gives no pidfd, a goroutine waiting for the process
// stands in for it: exit statuses, signals, output, stops and a background
// child holding the output all behave as with one.
func TestWithoutPidfd(t *testing.T) {
	saved := pidfdWorks
	pidfdWorks = func() bool { return false }
	t.Cleanup(func() { pidfdWorks = saved })
	sh := newShell(t)

	req := newRequest(t, "echo out; echo err >&2; exit 3")
	res, err := sh.Run(context.Background(), req)
	var he *Error
	if !errors.As(err, &he) || he.ExitCode != 3 {
		t.Errorf("Run: err = %v, want exit status 3", err)
	}
	if res.Stdout != "out\n" || res.Stderr != "err\n" {
		t.Errorf("stdout %q, stderr %q", res.Stdout, res.Stderr)
	}

	req = newRequest(t, "kill -KILL $$")
	if _, err := sh.Run(context.Background(), req); err == nil || err.Error() != "killed by SIGKILL" {
		t.Errorf("Run: err = %v, want killed by SIGKILL", err)
	}

	req = newRequest(t, "echo started; sleep 30")
	req.Timeout = 200 * time.Millisecond
	start := time.Now()
	res, err = sh.Run(context.Background(), req)
	if !errors.Is(err, ErrTimeout) || res.Stdout != "started\n" {
		t.Errorf("Run: err = %v, stdout %q; want a timeout after it started", err, res.Stdout)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("the stop took %v", took)
	}

	req = newRequest(t, "sleep 20 & echo $! >pids; echo done")
	start = time.Now()
	res, err = sh.Run(context.Background(), req)
	for _, pid := range readPids(t, filepath.Join(req.BaseDir, "pids")) {
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	}
	if err != nil || res.Stdout != "done\n" {
		t.Errorf("Run: err = %v, stdout %q", err, res.Stdout)
	}
	if took := time.Since(start); took < ioGrace || took > ioGrace+5*time.Second {
		t.Errorf("Run took %v, want about ioGrace (%v) after the script's exit", took, ioGrace)
	}
}

// An ended attempt's inputs file holds secrets: it is gone soon even
// when no other attempt follows and nobody settles, and its note is
// cleared at once.
func TestEndedAttemptFilesRemovedUnasked(t *testing.T) {
	tmp := t.TempDir()
	sh := &Shell{TempDir: tmp}
	req := newRequest(t, `printf %s "$SOLAR_INPUTS" >inputs.path`)
	if _, err := sh.Run(context.Background(), req); err != nil {
		t.Fatalf("Run: %v", err)
	}
	t.Cleanup(defaultLocal.Settle)
	inputs := readFile(t, filepath.Join(req.BaseDir, "inputs.path"))
	if notes := notesIn(filepath.Dir(inputs)); len(notes) > 0 {
		t.Errorf("notes left after the attempt ended: %+v", notes)
	}
	// Soon is tidyAfter; the margin is for a loaded machine.
	deadline := time.Now().Add(50 * tidyAfter)
	for {
		_, err := os.Stat(inputs)
		if errors.Is(err, os.ErrNotExist) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s is still there %v after the attempt ended (stat: %v)", inputs, 50*tidyAfter, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The start an attempt records for its group is no later than the
// leader's as /proc gives it, and close to it: a member that started
// before it is not the attempt's.
func TestGroupStartBoundsTheLeader(t *testing.T) {
	req := newRequest(t, "sleep 0.2")
	var g Procs
	var st procStat
	var statErr error
	req.Started = func(started Procs) {
		g = started
		st, statErr = readStat(started.PGID)
	}
	if _, err := newShell(t).Run(context.Background(), req); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if statErr != nil {
		t.Fatal(statErr)
	}
	// Close is within a second; the margin is for a loaded machine.
	if g.Start == 0 || g.Start > st.start || st.start-g.Start > 5*clockTicks {
		t.Errorf("group start %d, leader started at %d: want no later, and within five seconds", g.Start, st.start)
	}
}

// A variable set twice reaches the program once, with the value set last
// (solar's own settings come after what it inherits), as with os/exec.
func TestLastWins(t *testing.T) {
	got := lastWins([]string{"A=1", "B=2", "A=3", "C", "C=", "D=4"})
	want := []string{"B=2", "A=3", "C=", "D=4"}
	if !slices.Equal(got, want) {
		t.Errorf("lastWins = %q, want %q", got, want)
	}
	// env prints the environment as the kernel handed it over: a shell
	// would hide a duplicate.
	var out strings.Builder
	p, err := start(program{argv: []string{"/usr/bin/env"}, dir: t.TempDir(),
		env: []string{"SOLAR_TWICE=inherited", "OTHER=x", "SOLAR_TWICE=set"}, stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.wait(context.Background(), testGrace); err != nil {
		t.Fatal(err)
	}
	if out.String() != "OTHER=x\nSOLAR_TWICE=set\n" {
		t.Errorf("the program's environment is %q, want OTHER=x and SOLAR_TWICE=set once", out.String())
	}
}
