package orch

import (
	"errors"

	"github.com/solarops/solar/staging"
	"github.com/solarops/solar/store"
)

// TaskDiff is what a staged task of a plan changes.
type TaskDiff struct {
	// Source says where Diff comes from: "committed" (the task ran and
	// committed its entry: the history entry's diff), "staged" (the entry
	// as staged now), or "" when neither exists any more (discarded).
	Source string
	Diff   []staging.Change
}

// Diffs returns the diff of every staged task of plan rec, by task id.
// Tasks added by rules change no input: they have none.
func Diffs(tx *store.Tx, rec *Record) (map[string]TaskDiff, error) {
	out := map[string]TaskDiff{}
	byTask := map[string]*staging.HistoryEntry{}
	hist, err := staging.History(tx, 0)
	if err != nil {
		return nil, err
	}
	for _, h := range hist {
		if h.Plan == rec.UID {
			if _, ok := byTask[h.Task]; !ok {
				byTask[h.Task] = h // newest first: keep the last commit
			}
		}
	}
	for _, n := range rec.Plan.Nodes {
		if !n.Staged {
			continue
		}
		if h, ok := byTask[n.ID]; ok {
			out[n.ID] = TaskDiff{Source: "committed", Diff: h.Diff}
			continue
		}
		e, err := staging.Get(tx, n.StagedKey)
		switch {
		case err == nil:
			out[n.ID] = TaskDiff{Source: "staged", Diff: e.Diff}
		case errors.Is(err, staging.ErrNoEntry):
			out[n.ID] = TaskDiff{}
		default:
			return nil, err
		}
	}
	return out, nil
}
