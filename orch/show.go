package orch

import (
	"github.com/solarops/solar/planner"
	"github.com/solarops/solar/store"
)

// ShowSummary is what "orch show" shows of a plan, read in one
// transaction: the stored plan (its selection, edges and warnings), and
// each task in the order of Ordered with its status and what it changes.
type ShowSummary struct {
	Record *Record
	Tasks  []ShowTask
	// Stale lists the unfinished tasks that make the plan stale (see
	// StaleNow); empty for a plan that would run as reviewed.
	Stale []StaleTask
}

// ShowTask is one task of a ShowSummary.
type ShowTask struct {
	Node   planner.Node
	Status Status
	// Diff is what the task's staged entry changes; zero for a task a rule
	// added (see Diffs).
	Diff TaskDiff
}

// Show summarises the plan ref names ("last", "last~N" or a uid), as
// "orch show" shows it. The Record is shared (see Load): do not modify it.
func Show(tx *store.Tx, ref string) (*ShowSummary, error) {
	rec, states, err := LoadRef(tx, ref)
	if err != nil {
		return nil, err
	}
	diffs, err := Diffs(tx, rec)
	if err != nil {
		return nil, err
	}
	stale, err := StaleNow(tx, rec, states)
	if err != nil {
		return nil, err
	}
	nodes := Ordered(rec.Plan)
	s := &ShowSummary{Record: rec, Tasks: make([]ShowTask, 0, len(nodes)), Stale: stale}
	for _, n := range nodes {
		s.Tasks = append(s.Tasks, ShowTask{Node: n, Status: states[n.ID].Status, Diff: diffs[n.ID]})
	}
	return s, nil
}
