package orch

import (
	"github.com/solarops/solar/planner"
	"github.com/solarops/solar/staging"
	"github.com/solarops/solar/store"
)

// ShowSummary is what "orch show" shows of a plan, read in one
// transaction: the stored plan (its selection, edges and warnings), and
// each task in the order of Ordered with its status and what it changes.
// A plan shows what was reviewed, never today's values: a pinned plan's
// tasks show their pins.
type ShowSummary struct {
	Record *Record
	// Pinned is false for a plan made before pins were recorded (Pinned).
	Pinned bool
	Tasks  []ShowTask
	// Stale lists the unfinished tasks that make the plan stale (see
	// StaleNow); empty for a plan that would run as reviewed.
	Stale []StaleTask
	// Rates are the rates its tasks take from (PlanRates).
	Rates []PlanRate
}

// ShowTask is one task of a ShowSummary.
type ShowTask struct {
	Node   planner.Node
	Status Status
	// Diff is what the task's staged entry changes; zero for a task a rule
	// added (see Diffs). In a pinned plan, a task that has not committed
	// shows the diff recorded when the plan was made (Pin.Diff).
	Diff TaskDiff
	// Planned is the task's pin, ready to show; nil in a plan made before
	// pins, or for a task whose resource was gone when it was made.
	Planned *PlannedTask
	// After and Before are the tasks this one runs after and before (its
	// edges' other ends), sorted.
	After, Before []string
	// BatchGroup names the tasks this one may run in one batch with
	// (batch.go: showBatchGroups); "" when it always runs alone.
	BatchGroup string
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
	pins, err := Pins(tx, rec.UID)
	if err != nil {
		return nil, err
	}
	rates, err := PlanRates(tx, rec)
	if err != nil {
		return nil, err
	}
	nodeSens := nodeSensitivity(tx, rec.Plan, pins)
	after, before := neighbours(rec.Plan)
	nodes := Ordered(rec.Plan)
	s := &ShowSummary{Record: rec, Pinned: pins != nil, Tasks: make([]ShowTask, 0, len(nodes)), Stale: stale, Rates: rates}
	groups := showBatchGroups(tx, rec, pins)
	for _, n := range nodes {
		t := ShowTask{Node: n, Status: states[n.ID].Status, Diff: diffs[n.ID], After: after[n.ID], Before: before[n.ID], BatchGroup: groups[n.ID]}
		if pins != nil {
			var diff []staging.Change
			t.Planned, diff = planned(pins[n.ID], nodeSens)
			if n.Staged && t.Diff.Source != "committed" {
				// What was reviewed, not the staged log now (a later
				// update of the entry would show through).
				t.Diff = TaskDiff{Source: "staged", Diff: diff}
			}
		}
		s.Tasks = append(s.Tasks, t)
	}
	return s, nil
}
