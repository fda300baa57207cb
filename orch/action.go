package orch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/solarops/solar/planner"
	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/staging"
	"github.com/solarops/solar/store"
)

// ActionPlan makes and stores a plan of one task, resource name's action,
// for "solar resource action": the action runs now through the same
// runner as any plan (locks, node, logs, report, history) instead of a
// side door. No event rule is consulted; the plan is that task alone, and
// it runs whatever happened before it (it is staged, not reactive).
//
// The task sees the resource's current values, as the task of a staged
// entry does. When an entry is staged under name.action the task is that
// entry's (StagedKey): it carries the entry's diff and its success commits
// the entry, as in a processed plan. With nothing staged its success
// commits nothing, as any run of an action with no entry (the history
// gets no line): the current values then are the committed ones.
//
// An unknown resource wraps resources.ErrNotFound; an action its base does
// not define, or any action but remove on a resource staged for removal,
// wraps staging.ErrUnknownAction naming the base's actions; a staged entry
// already pending in an unfinished plan is refused with ErrPending, naming
// that plan and the way out. Then nothing is written. by is the actor
// (Record.ProcessedBy).
func ActionPlan(tx *store.Tx, name, action string, now time.Time, by string) (*Record, error) {
	p, err := actionGraph(tx, name, action)
	if err != nil {
		return nil, err
	}
	if key := p.Nodes[0].StagedKey; key != "" {
		// Its success commits the entry: another plan holding it would
		// then run a change already made.
		pending, err := Pending(tx)
		if err != nil {
			return nil, err
		}
		if uid, ok := pending[key]; ok {
			return nil, fmt.Errorf("%w: %s (plan %s); run that plan (solar orch resume %s), which runs it, or discard the entry (solar ch discard %s)", ErrPending, key, uid, uid, key)
		}
	}
	uid, err := NewUID(tx, now)
	if err != nil {
		return nil, err
	}
	pins, err := pinPlan(tx, p)
	if err != nil {
		return nil, err
	}
	rec := &Record{UID: uid, CreatedAt: now.UTC(), Selection: []string{}, Plan: p, ProcessedBy: by}
	if err := Save(tx, rec); err != nil {
		return nil, err
	}
	return rec, savePins(tx, uid, pins)
}

// actionGraph checks that resource name has action and returns the graph
// of its one task.
func actionGraph(tx *store.Tx, name, action string) (*planner.Plan, error) {
	r, err := resources.NewCatalog(tx).Get(name)
	if err != nil {
		return nil, err
	}
	if !r.HasAction(action) {
		return nil, fmt.Errorf("%w: %s has no action %q (its base %s defines: %s)", staging.ErrUnknownAction, name, action, r.Base.Name, strings.Join(r.Base.ActionNames(), ", "))
	}
	if r.Removing && action != staging.ActionRemove {
		return nil, fmt.Errorf("%w: %s is staged for removal, so only its remove action runs; discard that first (solar ch discard %s)", staging.ErrUnknownAction, name, staging.Key(name, staging.ActionRemove))
	}
	key := staging.Key(name, action)
	n := planner.Node{ID: key + "#0", Resource: name, Action: action, Staged: true, TriggeredBy: []string{}, Weight: 1}
	if _, err := staging.Get(tx, key); err == nil {
		n.StagedKey = key
	} else if !errors.Is(err, staging.ErrNoEntry) {
		return nil, err
	}
	return &planner.Plan{Nodes: []planner.Node{n}, Edges: []planner.Edge{}, Warnings: []string{}}, nil
}

// CheckAction predicts what running resource name's action now would do,
// as Check does for a plan's task (the base's check mode, else Unknown),
// with the task ActionPlan would make. Nothing is written, not even the
// plan: the returned record's UID is empty. Errors as ActionPlan's, but
// an entry pending elsewhere is not refused (nothing would commit it).
func (r *Runner) CheckAction(ctx context.Context, stop <-chan struct{}, name, action string) (*Record, []Prediction, error) {
	sdb, done := r.openStore()
	defer done()
	defer r.settle()
	rec := &Record{Selection: []string{}}
	var infos map[string]*taskInfo
	err := sdb.View(func(tx *store.Tx) error {
		var err error
		if rec.Plan, err = actionGraph(tx, name, action); err != nil {
			return err
		}
		if r.pins, err = pinPlan(tx, rec.Plan); err != nil {
			return err
		}
		infos, err = r.prepare(tx, rec)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	sdb.Close()
	preds, err := r.checkWalk(ctx, stop, rec, infos)
	return rec, preds, err
}
