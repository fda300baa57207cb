package orch

import (
	"testing"
	"time"

	"github.com/solarops/solar/store"
	"github.com/solarops/solar/store/kv"
)

// fakeFleetTx is the fleet's side of a transaction for tests of what
// orch writes beside it, on a bbolt store: its plan row, whether claims
// still hold, and which tasks a count-down frees.
type fakeFleetTx struct {
	plan     kv.FleetPlan
	held     bool            // FleetRelease and FleetComplete match
	last     map[string]bool // tasks FleetCountDown frees
	released map[string]bool // task: given back ready (true) or done
	set      map[string]bool // task: FleetSet ready (true) or done
}

func (f *fakeFleetTx) FleetSubmit(kv.FleetPlan, []kv.FleetTask) error { return nil }
func (f *fakeFleetTx) FleetPlan(string) (kv.FleetPlan, bool, error)   { return f.plan, true, nil }
func (f *fakeFleetTx) FleetSetPlan(string, bool, bool, int64) error   { return nil }
func (f *fakeFleetTx) FleetComplete(kv.Claim) (bool, error)           { return f.held, nil }
func (f *fakeFleetTx) FleetRows(string) ([]kv.FleetRow, error)        { return nil, nil }
func (f *fakeFleetTx) FleetDrop(string) error                         { return nil }
func (f *fakeFleetTx) FleetReap(int) ([]kv.Claim, error)              { return nil, nil }

func (f *fakeFleetTx) FleetRelease(c kv.Claim, ready bool) (bool, error) {
	if f.held {
		f.released[c.Task] = ready
	}
	return f.held, nil
}

func (f *fakeFleetTx) FleetCountDown(_ string, tasks []string) ([]string, error) {
	var out []string
	for _, t := range tasks {
		if f.last[t] {
			out = append(out, t)
		}
	}
	return out, nil
}

func (f *fakeFleetTx) FleetSet(_ string, tasks []string, ready bool) error {
	for _, t := range tasks {
		f.set[t] = ready
	}
	return nil
}

func newFakeFleetTx(held bool, last ...string) *fakeFleetTx {
	f := &fakeFleetTx{held: held, last: map[string]bool{}, released: map[string]bool{}, set: map[string]bool{}}
	for _, t := range last {
		f.last[t] = true
	}
	return f
}

// fleetTxOn runs fn in a write transaction of the bbolt store at path and
// returns the states of plan uid after it.
func fleetTxOn(t *testing.T, path, uid string, fn func(tx *store.Tx) error) map[string]State {
	t.Helper()
	var states map[string]State
	update(t, path, func(tx *store.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		rec, err := Load(tx, uid)
		if err != nil {
			return err
		}
		states, err = States(tx, rec)
		return err
	})
	return states
}

// TestFleetTaskStopAfterItEnded: a task whose run has returned keeps its
// outcome when the runner cancels it afterwards (a drain's kill, a
// heartbeat that finds its claim gone while its record is retried): only
// a kill of its plan, whose epoch moved, still gives it back.
func TestFleetTaskStopAfterItEnded(t *testing.T) {
	for _, why := range []string{whyLost, whyDrain, whyKilled} {
		running := &fleetTask{cancel: func() {}}
		running.stop(why)
		if got := running.reason(); got != why {
			t.Errorf("running task stopped (%s): reason %q", why, got)
		}
		ended := &fleetTask{cancel: func() {}}
		ended.end()
		ended.stop(why)
		want := ""
		if why == whyKilled {
			want = whyKilled
		}
		if got := ended.reason(); got != want {
			t.Errorf("ended task stopped (%s): reason %q, want %q", why, got, want)
		}
	}
}

// TestFleetGiveBackOfAKilledClaimTakenMeanwhile: a task of a killed plan
// is given back ERROR "killed" only while this runner's claim still holds
// it; a claim taken from it meanwhile (the task reaped, run and ended by
// another runner) leaves the task's state alone.
func TestFleetGiveBackOfAKilledClaimTakenMeanwhile(t *testing.T) {
	path, uid := chain4(t)
	fr := &fleetRun{f: &FleetRunner{Name: "r1"}}
	c := kv.Claim{UID: uid, Task: "n1.run#0", Owner: "r1", Fence: 7, Epoch: 1, Claims: 1}
	now := time.Now()
	done := State{Status: StatusSuccess, Changed: true, End: now}
	for _, held := range []bool{false, true} {
		ftx := newFakeFleetTx(held)
		ftx.plan = kv.FleetPlan{UID: uid, Epoch: 2}
		states := fleetTxOn(t, path, uid, func(tx *store.Tx) error {
			if err := PutState(tx, uid, c.Task, done); err != nil {
				return err
			}
			return fr.giveBack(tx, ftx, nil, c, whyKilled, now)
		})
		got := states[c.Task]
		if held && (got.Status != StatusError || got.Err != killed) {
			t.Errorf("claim held: %s %q, want ERROR killed", got.Status, got.Err)
		}
		if !held && got.Status != StatusSuccess {
			t.Errorf("claim taken meanwhile: %s %q, want the other runner's SUCCESS", got.Status, got.Err)
		}
	}
}

// TestFleetUnloadablePlan: a task whose plan does not load on the runner
// that claimed it goes back to ready while it was claimed fewer than
// loadClaims times; then it ends ERROR and its successors are decided.
func TestFleetUnloadablePlan(t *testing.T) {
	path, uid := chain4(t)
	fr := &fleetRun{f: &FleetRunner{Name: "r1"}}
	now := time.Now()
	c := kv.Claim{UID: uid, Task: "n1.run#0", Owner: "r1", Fence: 3, Claims: 1}
	ftx := newFakeFleetTx(true, "n2.run#0")
	states := fleetTxOn(t, path, uid, func(tx *store.Tx) error {
		return fr.unloadable(tx, ftx, c, "load plan: broken", now)
	})
	if ready, ok := ftx.released[c.Task]; !ok || !ready || states[c.Task].Status != StatusPending {
		t.Fatalf("first claim: released %v (%v), state %s; want ready, PENDING", ready, ok, states[c.Task].Status)
	}
	c.Claims = loadClaims
	ftx = newFakeFleetTx(true, "n2.run#0")
	states = fleetTxOn(t, path, uid, func(tx *store.Tx) error {
		return fr.unloadable(tx, ftx, c, "load plan: broken", now)
	})
	if ready, ok := ftx.released[c.Task]; !ok || ready {
		t.Errorf("claim %d: released %v (%v), want done", loadClaims, ready, ok)
	}
	if st := states[c.Task]; st.Status != StatusError || st.Err != "load plan: broken" {
		t.Errorf("claim %d: %s %q, want ERROR", loadClaims, st.Status, st.Err)
	}
	if st := states["n2.run#0"]; st.Status != StatusSkipped || st.Reason != "upstream failed: n1.run#0" {
		t.Errorf("successor: %s %q, want SKIPPED upstream failed", st.Status, st.Reason)
	}
	if ready, ok := ftx.set["n2.run#0"]; !ok || ready {
		t.Errorf("successor's row: set %v (%v), want done", ready, ok)
	}

	// A claim of a plan killed meanwhile: ERROR "killed", as any.
	path, uid = chain4(t)
	c = kv.Claim{UID: uid, Task: "n1.run#0", Owner: "r1", Fence: 3, Epoch: 1, Claims: 1}
	ftx = newFakeFleetTx(true)
	ftx.plan = kv.FleetPlan{UID: uid, Epoch: 2}
	states = fleetTxOn(t, path, uid, func(tx *store.Tx) error {
		return fr.unloadable(tx, ftx, c, "load plan: broken", now)
	})
	if st := states[c.Task]; st.Status != StatusError || st.Err != killed {
		t.Errorf("claim of a killed plan: %s %q, want ERROR killed", st.Status, st.Err)
	}
}
