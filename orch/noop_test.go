package orch

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/solarops/solar/internal/invalid"
	"github.com/solarops/solar/planner"
	"github.com/solarops/solar/store"
)

// TestMarkNoop checks which tasks orch noop marks and which it refuses:
// a pending task, or one a stop skipped (resume would run it), is marked
// NOOP "marked noop" and the plan's edit count moves so a live run sees it;
// a task marked already is left as it is; a task that started, ran or was
// skipped otherwise is refused naming its status, an unknown or ambiguous
// name is refused, and a refusal writes nothing.
func TestMarkNoop(t *testing.T) {
	path, uid := noopStack(t, []string{"a", "b", "c", "d", "e", "f", "g"})
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	update(t, path, func(tx *store.Tx) error {
		for id, st := range map[string]State{
			"b.run#0": {Status: StatusSkipped, Reason: ReasonStopped},
			"c.run#0": {Status: StatusSuccess},
			"d.run#0": {Status: StatusInProgress},
			"e.run#0": {Status: StatusSkipped, Reason: ReasonFiltered},
			"f.run#0": {Status: StatusNoop},
		} {
			if err := PutState(tx, uid, id, st); err != nil {
				return err
			}
		}
		return nil
	})
	for _, tt := range []struct {
		name  string
		tasks []string
		want  error
		msg   string
	}{
		{"ran", []string{"a.run", "c.run"}, ErrNoopTooLate, "c.run#0 is SUCCESS in plan " + uid},
		{"ran and changed nothing", []string{"f.run#0"}, ErrNoopTooLate, "f.run#0 is NOOP in plan"},
		{"started or interrupted", []string{"d.run"}, ErrNoopTooLate, "d.run#0 is INPROGRESS (running, or interrupted)"},
		{"skipped by a command", []string{"e.run"}, ErrNoopTooLate, "e.run#0 is SKIPPED (filtered)"},
		{"unknown", []string{"a.run", "nosuch.run"}, ErrUnknownTask, `"nosuch.run" in plan`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			update(t, path, func(tx *store.Tx) error {
				rec, err := Load(tx, uid)
				if err != nil {
					return err
				}
				before, edits := mustStates(t, tx, rec), editCount(tx, uid)
				_, err = MarkNoop(tx, rec, tt.tasks, now)
				if !errors.Is(err, tt.want) || !errors.Is(err, invalid.ErrInput) || !strings.Contains(err.Error(), tt.msg) {
					t.Fatalf("MarkNoop(%v) = %v, want %v naming %q", tt.tasks, err, tt.want, tt.msg)
				}
				if after := mustStates(t, tx, rec); after["a.run#0"] != before["a.run#0"] || editCount(tx, uid) != edits {
					t.Fatalf("a refused mark wrote: a.run#0 %v, edits %d -> %d", after["a.run#0"], edits, editCount(tx, uid))
				}
				return nil
			})
		})
	}

	update(t, path, func(tx *store.Tx) error {
		rec, err := Load(tx, uid)
		if err != nil {
			return err
		}
		edits := editCount(tx, uid)
		ids, err := MarkNoop(tx, rec, []string{"a.run", "b.run#0", "a.run#0"}, now)
		if err != nil {
			return err
		}
		if strings.Join(ids, ",") != "a.run#0,b.run#0" {
			t.Errorf("marked %v, want a.run#0 and b.run#0 once each", ids)
		}
		if editCount(tx, uid) != edits+1 {
			t.Errorf("edit count %d, want %d: a live run would not see the mark", editCount(tx, uid), edits+1)
		}
		states := mustStates(t, tx, rec)
		for _, id := range ids {
			if st := states[id]; !MarkedNoop(st) || !st.End.Equal(now) {
				t.Errorf("%s = %+v, want NOOP %q ended now", id, st, ReasonMarkedNoop)
			}
		}
		// Marked already: accepted, not written again.
		if _, err := MarkNoop(tx, rec, []string{"a.run"}, now.Add(time.Hour)); err != nil {
			return err
		}
		if st := mustStates(t, tx, rec)["a.run#0"]; !st.End.Equal(now) || editCount(tx, uid) != edits+1 {
			t.Errorf("marking a marked task again wrote it: %+v", st)
		}
		return nil
	})
}

// An action name that has several instances in the plan names none of
// them for orch noop: marking the first only would surprise.
func TestNoopTaskIDAmbiguous(t *testing.T) {
	rec := &Record{UID: "u1", Plan: &planner.Plan{Nodes: []planner.Node{
		{ID: "b.run#0", Resource: "b", Action: "run"},
		{ID: "b.run#1", Resource: "b", Action: "run", Instance: 1},
		{ID: "c.run#0", Resource: "c", Action: "run"},
	}}}
	if _, err := noopTaskID(rec, "b.run"); !errors.Is(err, ErrAmbiguousTask) || !strings.Contains(err.Error(), "b.run#0, b.run#1") {
		t.Fatalf("b.run: err = %v, want ambiguous naming both instances", err)
	}
	for name, want := range map[string]string{"b.run#1": "b.run#1", "c.run": "c.run#0"} {
		if id, err := noopTaskID(rec, name); err != nil || id != want {
			t.Errorf("%s = %q, %v; want %s", name, id, err, want)
		}
	}
}

// A task marked NOOP while a run goes on, which the walker skipped before
// beginning it (a stop, a failure upstream), stays NOOP in the store:
// otherwise resume would run a task the operator said must not run. And a
// marked task that reaches apply commits nothing (it ran nothing).
func TestApplyKeepsNoopMark(t *testing.T) {
	path, uid := noopStack(t, []string{"a", "b"})
	marked := State{Status: StatusNoop, Reason: ReasonMarkedNoop, End: time.Now().UTC().Truncate(time.Second)}
	update(t, path, func(tx *store.Tx) error {
		if err := PutState(tx, uid, "b.run#0", marked); err != nil {
			return err
		}
		l := &ledger{uid: uid}
		if err := l.apply(tx, nil, "b.run#0", State{Status: StatusSkipped, Reason: ReasonStopped}); err != nil {
			return err
		}
		if st, err := TaskState(tx, uid, "b.run#0"); err != nil || !MarkedNoop(st) {
			t.Fatalf("b.run#0 = %+v, %v after the walker's skip; want the NOOP mark kept", st, err)
		}
		// No task info, no catalog: apply must not reach the commit.
		return l.apply(tx, nil, "b.run#0", marked)
	})
}

func mustStates(t *testing.T, tx *store.Tx, rec *Record) map[string]State {
	t.Helper()
	states, err := States(tx, rec)
	if err != nil {
		t.Fatal(err)
	}
	return states
}
