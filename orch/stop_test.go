package orch

import (
	"encoding/json"
	"errors"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/solarops/solar/store"
)

// TestStop: a stop request is written only for a live runner, with "kill"
// when asked, and a runner of this machine is sent SIGTERM once it is
// committed; a plan nobody runs is left as it is.
func TestStop(t *testing.T) {
	for _, tc := range []struct {
		name    string
		runner  bool // a live process of this machine is recorded as the runner
		kill    bool
		request string // the stop request stored; "-" for none
	}{
		{name: "not running", request: "-"},
		{name: "soft", runner: true, request: ""},
		{name: "kill", runner: true, kill: true, request: stopKill},
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
				update(t, path, func(tx *store.Tx) error {
					raw, _ := json.Marshal(runnerRecord{PID: child.Process.Pid, Host: hostname, Started: time.Now()})
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
				want.PID = child.Process.Pid
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
