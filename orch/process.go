package orch

import (
	"sort"
	"time"

	"github.com/solarops/solar/events"
	"github.com/solarops/solar/planner"
	"github.com/solarops/solar/staging"
	"github.com/solarops/solar/store"
	"github.com/solarops/solar/tags"
)

// ProcessResult is what Process made.
type ProcessResult struct {
	Record *Record // nil when nothing was staged for the selection
	// Superseded are the older plans whose tasks not started were skipped,
	// by uid.
	Superseded []SupersededPlan
	// StagedBy lists the keys of the planned entries by who last staged
	// them ("" for entries staged before actors), in staging order, so
	// that a command can say whose edits it took.
	StagedBy map[string][]string
}

// Process turns the staged entries selected by exprs (all when none; the
// union of several) into a plan and stores it. An entry still pending in an
// unfinished plan is refused with ErrPending, naming the plan and the way
// out that works for it, unless supersede is set: then that plan's tasks
// not started are SKIPPED "superseded by UID" and its finished ones kept.
// by is the actor who processes (Record.ProcessedBy).
func Process(tx *store.Tx, exprs []*tags.Expr, selection []string, supersede bool, now time.Time, by string) (*ProcessResult, error) {
	ents, err := selectEntries(tx, exprs)
	if err != nil || len(ents) == 0 {
		return &ProcessResult{}, err
	}
	out := &ProcessResult{StagedBy: map[string][]string{}}
	keys := make([]string, len(ents))
	for i, e := range ents {
		keys[i] = e.Key
		out.StagedBy[e.StagedBy] = append(out.StagedBy[e.StagedBy], e.Key)
	}
	pending, err := Pending(tx)
	if err != nil {
		return nil, err
	}
	var clashes []clash
	for _, k := range keys {
		if uid, ok := pending[k]; ok {
			clashes = append(clashes, clash{key: k, uid: uid})
		}
	}
	if len(clashes) > 0 && !supersede {
		return nil, refusePending(tx, clashes)
	}
	// The uid comes first: the tasks it takes over say which plan has them.
	uid, err := NewUID(tx, now)
	if err != nil {
		return nil, err
	}
	if len(clashes) > 0 {
		if out.Superseded, err = Supersede(tx, keys, uid, now); err != nil {
			return nil, err
		}
	}
	rules, err := events.List(tx)
	if err != nil {
		return nil, err
	}
	in := planner.Input{Rules: rules, Entries: make([]planner.Entry, len(ents))}
	for i, e := range ents {
		in.Entries[i] = planner.Entry{Key: e.Key, Resource: e.Resource, Action: e.Action}
	}
	p, err := planner.Build(in)
	if err != nil {
		return nil, err
	}
	if selection == nil {
		selection = []string{}
	}
	pins, err := pinPlan(tx, p)
	if err != nil {
		return nil, err
	}
	out.Record = &Record{UID: uid, CreatedAt: now.UTC(), Selection: selection, Plan: p, ProcessedBy: by}
	if err := Save(tx, out.Record); err != nil {
		return nil, err
	}
	return out, savePins(tx, uid, pins)
}

// selectEntries returns the union of the entries each expression selects
// (all when there is none), in staging order. Planning needs only their
// heads, not their diffs.
func selectEntries(tx *store.Tx, exprs []*tags.Expr) ([]*staging.Head, error) {
	if len(exprs) == 0 {
		return staging.SelectHeads(tx, nil)
	}
	seen := map[string]bool{}
	var out []*staging.Head
	for _, e := range exprs {
		ents, err := staging.SelectHeads(tx, e)
		if err != nil {
			return nil, err
		}
		for _, en := range ents {
			if !seen[en.Key] {
				seen[en.Key] = true
				out = append(out, en)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out, nil
}
