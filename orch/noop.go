package orch

import (
	"fmt"
	"strings"
	"time"

	"github.com/solarops/solar/internal/invalid"
	"github.com/solarops/solar/store"
)

// An operator may mark tasks NOOP before or during a run (orch noop, the
// original Solar's): such a task does not run, and what depends on it
// proceeds as after any NOOP (an ordering edge lets its successor run, a
// react rule on "ok" or "noop" fires, one on "changed" does not). It ran
// nothing, so it commits nothing: its staged entry stays staged, and the
// next "ch process" plans it again.
//
// The mark is a live edit (edit.go): written as the task's final state with
// ReasonMarkedNoop, the plan's edit count bumped, so that a live run sees
// it before it starts the task (control.ended) and a fleet's rows count it
// done (fleetSkipped).

// ReasonMarkedNoop is the State.Reason of a task orch noop marked NOOP: it
// did not run.
const ReasonMarkedNoop = "marked noop"

// Errors of MarkNoop.
var (
	// ErrNoopTooLate means a task given to orch noop has started (or was
	// interrupted), run, or been skipped already: only a task that has not
	// started can be marked.
	ErrNoopTooLate = invalid.New("task cannot be marked noop")
	// ErrAmbiguousTask means an action name given without "#n" names
	// several instances in the plan.
	ErrAmbiguousTask = invalid.New("task name is ambiguous")
)

// MarkedNoop reports whether st is the state of a task orch noop marked:
// NOOP without having run.
func MarkedNoop(st State) bool { return st.Status == StatusNoop && st.Reason == ReasonMarkedNoop }

// MarkNoop marks the tasks of plan rec that names give (ids, or actions
// with a single instance) NOOP, and returns their ids in the order given,
// each once. A task already marked stays as it is. A task that has started,
// run or been skipped (other than by a stop, which resume would undo) is
// refused with ErrNoopTooLate naming its status, and nothing is written;
// so is a task a fleet runner has claimed (ErrRunning).
func MarkNoop(tx *store.Tx, rec *Record, names []string, now time.Time) ([]string, error) {
	states, err := States(tx, rec)
	if err != nil {
		return nil, err
	}
	var ids, todo []string
	seen := map[string]bool{}
	for _, name := range names {
		id, err := noopTaskID(rec, name)
		if err != nil {
			return nil, err
		}
		if seen[id] {
			continue
		}
		seen[id] = true
		ids = append(ids, id)
		st := states[id]
		switch {
		case MarkedNoop(st):
		case st.Status == StatusPending || Stopped(st) && st.Status == StatusSkipped:
			todo = append(todo, id)
		default:
			return nil, fmt.Errorf("%w: %s is %s in plan %s; only a task that has not started can be marked noop",
				ErrNoopTooLate, id, describeState(st), rec.UID)
		}
	}
	end := State{Status: StatusNoop, Reason: ReasonMarkedNoop, End: now}
	if err := endTasks(tx, rec.UID, todo, states, end, now); err != nil {
		return nil, err
	}
	return ids, closeIfDone(tx, rec.UID, states)
}

// noopTaskID resolves a task name as TaskID does, except that an action
// with several instances must be named by id: marking the first one only
// would surprise.
func noopTaskID(rec *Record, name string) (string, error) {
	id, err := TaskID(rec, name)
	if err != nil || id == name {
		return id, err
	}
	var all []string
	for _, n := range rec.Plan.Nodes {
		if n.Resource+"."+n.Action == name {
			all = append(all, n.ID)
		}
	}
	if len(all) > 1 {
		return "", fmt.Errorf("%w: %q has %d instances in plan %s (%s); name one", ErrAmbiguousTask, name, len(all), rec.UID, strings.Join(all, ", "))
	}
	return id, nil
}

// describeState names a task's state for a message: its status, and the
// reason of a SKIPPED one.
func describeState(st State) string {
	switch {
	case st.Status == StatusSkipped && st.Reason != "":
		return fmt.Sprintf("%s (%s)", st.Status, st.Reason)
	case st.Status == StatusInProgress:
		return "INPROGRESS (running, or interrupted)"
	}
	return string(st.Status)
}
