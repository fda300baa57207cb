package orch

import "github.com/solarops/solar/store"

// Unfinished returns the ids of the tasks a run of the plan would still
// run: those not finished, and those a stop left (resume runs them again).
// The order is the map's: callers that show it sort it.
func Unfinished(states map[string]State) []string {
	var ids []string
	for id, st := range states {
		if !st.Status.Finished() || Stopped(st) {
			ids = append(ids, id)
		}
	}
	return ids
}

// StaleNow returns the stale tasks of plan rec (see Stale) among those not
// finished: a finished task ran what was reviewed and cannot go stale. The
// list is sorted by task id and never nil, so that a fresh plan renders as
// an empty list.
func StaleNow(tx *store.Tx, rec *Record, states map[string]State) ([]StaleTask, error) {
	ids := Unfinished(states)
	if len(ids) == 0 {
		return []StaleTask{}, nil
	}
	stale, err := Stale(tx, rec, ids)
	if stale == nil {
		stale = []StaleTask{}
	}
	return stale, err
}

// refuseStaleCheck fails with ErrStale when plan rec is stale for a task
// not yet finished, as run-once does: a check of a plan that would not run
// predicts nothing the operator can use.
func refuseStaleCheck(tx *store.Tx, rec *Record) error {
	states, err := States(tx, rec)
	if err != nil {
		return err
	}
	return RefuseStale(tx, rec, Unfinished(states))
}

// GraphSummary is what "orch dg" draws of a plan: the plan, the state of
// each task (its color), and the tasks that make it stale.
type GraphSummary struct {
	Record *Record
	States map[string]State
	// Stale is as in ShowSummary.
	Stale []StaleTask
}

// Graph summarises the plan ref names ("last", "last~N" or a uid), as
// "orch dg" draws it. The Record is shared (see Load).
func Graph(tx *store.Tx, ref string) (*GraphSummary, error) {
	rec, states, err := LoadRef(tx, ref)
	if err != nil {
		return nil, err
	}
	stale, err := StaleNow(tx, rec, states)
	if err != nil {
		return nil, err
	}
	return &GraphSummary{Record: rec, States: states, Stale: stale}, nil
}
