package orch

import (
	"encoding/json"
	"errors"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/solarops/solar/internal/proc"
	"github.com/solarops/solar/store"
)

// TestStop: a stop request is written only for a live runner, with "kill"
// when asked, and a runner of this machine (a bbolt file cannot notify) is
// sent SIGTERM once it is committed, only if its pid and start time match
// its record: a live process recorded with another start time (its pid
// reused) is never signalled; a plan nobody runs is left as it is.
func TestStop(t *testing.T) {
	for _, tc := range []struct {
		name      string
		runner    bool // a live process of this machine is recorded as the runner
		wrongTime bool // ... with a start time that is not its own
		kill      bool
		request   string // the stop request stored; "-" for none
	}{
		{name: "not running", request: "-"},
		{name: "soft", runner: true, request: ""},
		{name: "kill", runner: true, kill: true, request: stopKill},
		{name: "pid reused", runner: true, wrongTime: true, request: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := testStorePath(t)
			var uid string
			update(t, path, func(tx *store.Tx) error {
				uid = savePlan(t, tx, time.Now(), stagedNode("a", "run"))
				return nil
			})
			var (
				child *exec.Cmd
				done  = make(chan error, 1) // the runner's end
			)
			if tc.runner {
				child = exec.Command("sleep", "60")
				if err := child.Start(); err != nil {
					t.Fatal(err)
				}
				go func() { done <- child.Wait() }()
				t.Cleanup(func() { _ = child.Process.Kill() })
				start, _, ok := proc.Start(child.Process.Pid)
				if !ok {
					t.Fatal("no start time of the child")
				}
				if tc.wrongTime {
					start--
				}
				update(t, path, func(tx *store.Tx) error {
					raw, _ := json.Marshal(runnerRecord{PID: child.Process.Pid, Host: hostname, Started: time.Now(), ProcStart: start})
					return tx.Put(store.Plans, runnerKey(uid), raw)
				})
			}
			db, err := store.Open(path, store.Options{NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			res, err := Stop(db, "last", tc.kill)
			db.Close()
			if err != nil {
				t.Fatal(err)
			}
			want := StopResult{UID: uid, Running: tc.runner}
			if tc.runner {
				want.PID, want.Host, want.Signalled = child.Process.Pid, hostname, !tc.wrongTime
			}
			if res != want {
				t.Errorf("Stop = %+v, want %+v", res, want)
			}
			view(t, path, func(tx *store.Tx) error {
				got, err := tx.Get(store.Plans, stopKey(uid))
				switch {
				case tc.request == "-" && !errors.Is(err, store.ErrNotFound):
					t.Errorf("a stop request %q (%v) was written for a plan nobody runs", got, err)
				case tc.request != "-" && (err != nil || string(got) != tc.request):
					t.Errorf("stop request = %q (%v), want %q", got, err, tc.request)
				}
				return nil
			})
			if !tc.runner {
				return
			}
			if tc.wrongTime {
				select {
				case err := <-done:
					t.Fatalf("a process that is not the runner was signalled: %v", err)
				case <-time.After(300 * time.Millisecond):
				}
				return
			}
			select {
			case err := <-done:
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM {
					t.Errorf("the runner ended with %v, want SIGTERM", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the runner of this machine was not signalled")
			}
		})
	}
}

// TestIsRunnerHere: a record matches only the live process of this host
// with the recorded pid and start time; a record of another host, of
// another start time, without a start time, or of a dead pid never does.
func TestIsRunnerHere(t *testing.T) {
	child := exec.Command("sleep", "60")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = child.Process.Kill(); _ = child.Wait() }()
	pid := child.Process.Pid
	start, _, ok := proc.Start(pid)
	if !ok || start <= 0 {
		t.Fatalf("proc.Start(%d) = %d, %v", pid, start, ok)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		rr   runnerRecord
		want bool
	}{
		{"the runner", runnerRecord{PID: pid, Host: hostname, ProcStart: start}, true},
		{"another host", runnerRecord{PID: pid, Host: hostname + "-other", ProcStart: start}, false},
		{"another start time", runnerRecord{PID: pid, Host: hostname, ProcStart: start + 1}, false},
		{"no start time", runnerRecord{PID: pid, Host: hostname}, false},
		{"no host", runnerRecord{PID: pid, ProcStart: start}, false},
		{"a dead pid", runnerRecord{PID: dead.Process.Pid, Host: hostname, ProcStart: start}, false},
	} {
		if got := tc.rr.isRunnerHere(); got != tc.want {
			t.Errorf("%s: isRunnerHere = %v, want %v", tc.name, got, tc.want)
		}
		if !tc.want && signalRunner(tc.rr) {
			t.Errorf("%s: signalled", tc.name)
		}
	}
	if !running(pid) {
		t.Fatal("the child was signalled")
	}
	if own := selfStart(); own <= 0 {
		t.Errorf("selfStart = %d: runner records would carry no start time", own)
	}
}

// running reports whether pid lives and is not a zombie.
func running(pid int) bool {
	_, zombie, ok := proc.Start(pid)
	return ok && !zombie
}
