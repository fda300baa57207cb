package orch

import (
	"time"

	"github.com/solarops/solar/store"
)

// ReportSummary is what "orch report" shows of a plan: every task in the
// order of Ordered with its state, and the totals. It is read in one
// transaction, so its parts agree with each other.
type ReportSummary struct {
	UID string
	// Finished is false while some task has not finished, or was stopped
	// (orch resume would run it).
	Finished bool
	// Running is true while a live process runs the plan; RunnerPID is its
	// pid then.
	Running   bool
	RunnerPID int
	// Wall is the time from the first task's start to the last task's end;
	// 0 before any task ended.
	Wall time.Duration
	// Totals counts the tasks by status; every status has an entry.
	Totals map[Status]int
	// Checked is true when orch check predicted the tasks' outcomes.
	Checked bool
	Tasks   []ReportTask
	// Stale lists the unfinished tasks that make the plan stale (see
	// StaleNow); empty for a plan that would run as reviewed.
	Stale []StaleTask
	// ProcessedBy is who made the plan (Record.ProcessedBy).
	ProcessedBy string
}

// ReportTask is one task of a ReportSummary.
type ReportTask struct {
	ID    string
	State State
	// Duration is End-Start when the task has both; 0 otherwise.
	Duration time.Duration
	// Predicted is what the last orch check predicted; "" if none.
	Predicted string
	// Logged is true for a task in ERROR one of whose attempts printed
	// something: its log says more than its error line.
	Logged bool
	// Attempts are the ended attempts of the run that left State (its
	// State.Attempts, numbered over the plan's life), with who ran each;
	// empty for a task that has not run, or whose handler keeps no log
	// (noop).
	Attempts []AttemptRecord
	// Corrective is true for a task that ran because of drift: its staged
	// entry came from drift --stage (Pin.Corrective), not from a change.
	Corrective bool
	// Waiting is what a running task waits for before its next attempt
	// starts ("rate api", rates.go); "" when it waits for nothing.
	Waiting string
}

// reportStatuses are the statuses a report counts, each with an entry in
// ReportSummary.Totals.
var reportStatuses = []Status{StatusPending, StatusInProgress, StatusSuccess, StatusNoop, StatusSkipped, StatusError}

// Report summarises the plan ref names ("last", "last~N" or a uid), as
// "orch report" shows it.
func Report(tx *store.Tx, ref string) (*ReportSummary, error) {
	rec, states, err := LoadRef(tx, ref)
	if err != nil {
		return nil, err
	}
	preds, err := Predictions(tx, rec.UID)
	if err != nil {
		return nil, err
	}
	s := &ReportSummary{UID: rec.UID, Finished: true, Totals: make(map[Status]int, len(reportStatuses)), Checked: len(preds) > 0, ProcessedBy: rec.ProcessedBy}
	s.RunnerPID, s.Running = Running(tx, rec.UID)
	if s.Stale, err = StaleNow(tx, rec, states); err != nil {
		return nil, err
	}
	for _, st := range reportStatuses {
		s.Totals[st] = 0
	}
	recs, err := AttemptRecords(tx, rec.UID)
	if err != nil {
		return nil, err
	}
	pins, err := Pins(tx, rec.UID)
	if err != nil {
		return nil, err
	}
	waits := map[string]string{}
	if s.Running {
		if waits, err = RateWaits(tx, rec.UID); err != nil {
			return nil, err
		}
	}
	var first, last time.Time
	for _, n := range Ordered(rec.Plan) {
		st := states[n.ID]
		t := ReportTask{ID: n.ID, State: st, Predicted: preds[n.ID].What, Attempts: lastAttempts(st, recs[n.ID]), Corrective: pins[n.ID] != nil && pins[n.ID].Corrective}
		if !st.Start.IsZero() && !st.End.IsZero() {
			t.Duration = st.End.Sub(st.Start)
		}
		if st.Status == StatusInProgress {
			t.Waiting = waits[n.ID]
		}
		if st.Status == StatusError {
			if t.Logged, err = printed(tx, rec.UID, n.ID); err != nil {
				return nil, err
			}
		}
		if !st.Start.IsZero() && (first.IsZero() || st.Start.Before(first)) {
			first = st.Start
		}
		if st.End.After(last) {
			last = st.End
		}
		if !st.Status.Finished() || Stopped(st) {
			s.Finished = false
		}
		s.Totals[st.Status]++
		s.Tasks = append(s.Tasks, t)
	}
	if !first.IsZero() && last.After(first) {
		s.Wall = last.Sub(first)
	}
	return s, nil
}

// lastAttempts returns the attempts of list that the run which left st
// made: those of the latest attempt's run, unless st says the task has
// not run since (a task reset to PENDING).
func lastAttempts(st State, list []AttemptRecord) []AttemptRecord {
	if st.Attempts == 0 {
		return []AttemptRecord{}
	}
	run := LastRun(list)
	if len(run) > st.Attempts {
		run = run[len(run)-st.Attempts:]
	}
	return run
}

// printed reports whether some attempt of task printed a line.
func printed(tx *store.Tx, uid, task string) (bool, error) {
	attempts, err := Attempts(tx, uid, task)
	if err != nil {
		return false, err
	}
	for _, n := range attempts {
		l, err := ReadLog(tx, uid, task, n, 0)
		if err != nil {
			return false, err
		}
		if len(l.Lines) > 0 {
			return true, nil
		}
	}
	return false, nil
}

// LoadRef resolves ref ("last", "last~N" or a uid) and returns the plan
// with the recorded state of each task. The Record is shared (see Load).
func LoadRef(tx *store.Tx, ref string) (*Record, map[string]State, error) {
	uid, err := Resolve(tx, ref)
	if err != nil {
		return nil, nil, err
	}
	rec, err := Load(tx, uid)
	if err != nil {
		return nil, nil, err
	}
	states, err := States(tx, rec)
	if err != nil {
		return nil, nil, err
	}
	return rec, states, nil
}
