package orch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/solarops/solar/internal/invalid"
	"github.com/solarops/solar/orch/handler"
	"github.com/solarops/solar/orch/walk"
	"github.com/solarops/solar/planner"
	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/staging"
	"github.com/solarops/solar/store"
	"github.com/solarops/solar/tags"
)

// Drift is the question "is the world still what was committed?": the
// check of every selected committed resource, run with its committed
// values (never a change staged since), read-only, and its answer per
// resource. Every drift run is kept (driftrun/ID in the plans bucket).

// What drift found for a resource.
const (
	DriftInSync   = "in sync"
	DriftDrifted  = "drifted"
	DriftCannot   = "cannot check" // its base has no check for its action
	DriftError    = "error"
	DriftCause    = "drift" // the cause of an entry drift --stage stages
	driftLogLines = 5       // the last lines of a drifted check kept as its detail
)

// DriftResult is what drift found for one resource.
type DriftResult struct {
	Resource string `json:"resource"`
	// Action is the action whose check ran: update where the base checks
	// it, else run.
	Action string `json:"action"`
	Status string `json:"status"`
	// Changes are what the check said differs (its result's "changes"),
	// Ignored those the ignore rules dropped.
	Changes []string `json:"changes"`
	Ignored []string `json:"ignored"`
	// Detail is what the check printed last (masked) for a drifted
	// resource, the error for one that failed, why for one that cannot be
	// checked.
	Detail string `json:"detail"`
}

// DriftRun is one drift run, as kept.
type DriftRun struct {
	ID        string        `json:"id"`
	By        string        `json:"by"`
	Host      string        `json:"host"`
	Started   time.Time     `json:"started"`
	Ended     time.Time     `json:"ended"`
	Selection string        `json:"selection"`
	Results   []DriftResult `json:"results"`
	// Staged are the entries drift --stage staged (cause "drift").
	Staged []string `json:"staged"`
}

// Count returns how many results have status.
func (d *DriftRun) Count(status string) int {
	n := 0
	for _, r := range d.Results {
		if r.Status == status {
			n++
		}
	}
	return n
}

// DriftOptions select what drift checks and how.
type DriftOptions struct {
	// Tags, if set, selects resources by tag; Names by name; neither
	// selects every committed resource. Selection says it in words, for
	// the record.
	Tags      *tags.Expr
	Names     []string
	Selection string
	// Concurrency and PerNode bound the checks as they bound a run.
	Concurrency, PerNode int
	// Stage stages the corrective action of each drifted resource.
	Stage bool
	// Settings are what the checks run with: Shell, SSH,
	// AnsiblePlaybook, CacheDir, Now, Actor, Host, Progress, Note.
	Settings Runner
}

func driftKey(id string) string { return "driftrun/" + id }

// ErrNoDriftRun means drift show was given an ID no run has.
var ErrNoDriftRun = invalid.New("no such drift run")

// Drift runs the checks of the resources o selects and keeps the run. An
// unknown name in o.Names is bad input (resources.ErrNotFound).
func Drift(ctx context.Context, h *store.Handle, o DriftOptions) (*DriftRun, error) {
	r := o.Settings
	r.Store, r.Concurrency, r.PerNode = h, max(o.Concurrency, 1), max(o.PerNode, 1)
	sdb, done := r.openStore()
	defer done()
	defer r.settle()
	run := &DriftRun{By: r.Actor, Host: r.runHost(), Started: r.Now().UTC(), Selection: o.Selection, Staged: []string{}}
	var (
		rec    *Record
		infos  map[string]*taskInfo
		ignore map[string][]string
	)
	err := sdb.View(func(tx *store.Tx) error {
		var err error
		rec, ignore, run.Results, err = driftPlan(tx, o)
		if err != nil || len(rec.Plan.Nodes) == 0 {
			return err
		}
		if r.pins, err = driftPins(tx, rec); err != nil {
			return err
		}
		// Pinned as no entry of theirs applied (committed values), each
		// check then runs as a staged task does: it is not reactive.
		for i := range rec.Plan.Nodes {
			rec.Plan.Nodes[i].Staged = true
		}
		infos, err = r.prepare(tx, rec)
		return err
	})
	if err != nil {
		return nil, err
	}
	sdb.Close() // checks write nothing: let others in meanwhile
	if len(rec.Plan.Nodes) > 0 {
		found, err := r.driftChecks(ctx, rec, infos, ignore)
		if err != nil {
			return nil, err
		}
		run.Results = append(run.Results, found...)
	}
	sort.Slice(run.Results, func(i, j int) bool { return run.Results[i].Resource < run.Results[j].Resource })
	run.Ended = r.Now().UTC()
	err = sdb.Update(func(tx *store.Tx) error { return keepDrift(tx, run, o.Stage, r) })
	return run, err
}

// driftPlan selects the committed resources o names and makes the plan of
// their checks: one task per resource that can be checked. The others'
// results (cannot check) come back at once, and each checked resource's
// ignore list.
func driftPlan(tx *store.Tx, o DriftOptions) (*Record, map[string][]string, []DriftResult, error) {
	cat := resources.NewCatalog(tx)
	var names []string
	if len(o.Names) > 0 {
		for _, n := range o.Names {
			if _, err := cat.Get(n); err != nil {
				return nil, nil, nil, err
			}
		}
		names = slices.Clone(o.Names)
	} else {
		all, err := cat.List(o.Tags)
		if err != nil {
			return nil, nil, nil, err
		}
		for _, res := range all {
			names = append(names, res.Name)
		}
	}
	sort.Strings(names)
	rec := &Record{UID: "drift", Plan: &planner.Plan{}}
	ignore := map[string][]string{}
	var cannot []DriftResult
	for _, name := range slices.Compact(names) {
		if snap, err := staging.Committed(tx, name); err != nil || snap == nil {
			if err != nil {
				return nil, nil, nil, err
			}
			continue // never committed: nothing to compare with
		}
		res, err := cat.Get(name)
		if err != nil {
			return nil, nil, nil, err
		}
		action := "run"
		switch {
		case res.Base.Checks("update"):
			action = "update"
		case res.Base.Checks("run"):
		default:
			cannot = append(cannot, DriftResult{Resource: name, Action: "", Status: DriftCannot, Changes: []string{}, Ignored: []string{},
				Detail: fmt.Sprintf("base %s checks neither run nor update", res.Base.Name)})
			continue
		}
		ignore[name] = append(slices.Clone(res.Base.DriftIgnore), res.EffectiveMeta().DriftIgnore...)
		rec.Plan.Nodes = append(rec.Plan.Nodes, planner.Node{ID: name + "." + action + "#0", Resource: name, Action: action})
	}
	return rec, ignore, cannot, nil
}

// driftPins pins each check to what its resource committed: its values
// (the pinning rule with no entry applied, so every resource is seen as
// committed) and the base and node of the plan that committed it.
func driftPins(tx *store.Tx, rec *Record) (map[string]*Pin, error) {
	pins, err := pinPlan(tx, rec.Plan)
	if err != nil {
		return nil, err
	}
	for _, n := range rec.Plan.Nodes {
		p := pins[n.ID]
		if p == nil {
			continue
		}
		uid := staging.CommittedPlan(tx, n.Resource)
		if uid == "" {
			continue
		}
		// Only this resource's pins of that plan: decoding all of them
		// for each resource made drift quadratic (BenchmarkDrift).
		err := tx.ForEach(store.Plans, pinPrefix(uid)+n.Resource+".", func(k string, raw []byte) error {
			var op Pin
			if err := json.Unmarshal(raw, &op); err != nil {
				return fmt.Errorf("decode pin of %s: %w", k, err)
			}
			if op.Base.Digest != "" {
				p.Base = op.Base
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return pins, nil
}

// driftChecks runs the checks of rec's tasks and says what each found.
func (r *Runner) driftChecks(ctx context.Context, rec *Record, infos map[string]*taskInfo, ignore map[string][]string) ([]DriftResult, error) {
	tasks, err := walkTasks(rec, infos, r.PerNode)
	if err != nil {
		return nil, err
	}
	c := &driftChecker{infos: infos, found: map[string]handler.Result{}}
	w := &walk.Walker{Concurrency: r.Concurrency, Run: c.run, Progress: r.Progress, Now: r.Now}
	states, err := w.Walk(ctx, tasks, nil, nil)
	if err != nil {
		return nil, err
	}
	out := make([]DriftResult, 0, len(rec.Plan.Nodes))
	for _, n := range rec.Plan.Nodes {
		out = append(out, c.result(n, states[n.ID], ignore[n.Resource]))
	}
	return out, nil
}

// driftChecker runs drift's checks (Walker.Run) and keeps what each said.
type driftChecker struct {
	infos map[string]*taskInfo
	mu    sync.Mutex
	found map[string]handler.Result
}

func (c *driftChecker) run(ctx context.Context, t *walk.Task) walk.Outcome {
	info := c.infos[t.ID]
	switch {
	case info.problem != "":
		return walk.Outcome{Err: errors.New(info.problem), Attempts: 1}
	case info.noop:
		return walk.Outcome{Attempts: 1}
	}
	res, err := info.handler.Run(ctx, info.checkRequest(t.ID))
	c.mu.Lock()
	c.found[t.ID] = res
	c.mu.Unlock()
	if err != nil {
		return walk.Outcome{Err: err, Attempts: 1}
	}
	return walk.Outcome{Changed: res.Changed, Attempts: 1}
}

// result is what task n's check, ended in st, found, with ignore applied.
func (c *driftChecker) result(n planner.Node, st State, ignore []string) DriftResult {
	c.mu.Lock()
	res := c.found[n.ID]
	c.mu.Unlock()
	out := DriftResult{Resource: n.Resource, Action: n.Action, Changes: []string{}, Ignored: []string{}}
	switch st.Status {
	case StatusError:
		out.Status, out.Detail = DriftError, oneLine(st.Err)
		return out
	case StatusNoop:
		out.Status = DriftInSync
		return out
	case StatusSuccess:
	default:
		out.Status, out.Detail = DriftError, "not checked: "+st.Reason
		return out
	}
	for _, ch := range res.Changes {
		if slices.Contains(ignore, ch) {
			out.Ignored = append(out.Ignored, ch)
		} else {
			out.Changes = append(out.Changes, ch)
		}
	}
	if len(res.Changes) > 0 && len(out.Changes) == 0 {
		out.Status = DriftInSync // every difference is one to ignore
		return out
	}
	out.Status = DriftDrifted
	var lines []string
	for _, l := range res.Log[max(len(res.Log)-driftLogLines, 0):] {
		lines = append(lines, l.Text)
	}
	out.Detail = strings.Join(lines, " | ")
	return out
}

// keepDrift records run in tx and, with stage, stages the corrective
// action of each drifted resource (cause "drift") unless that entry is
// already staged for another reason.
func keepDrift(tx *store.Tx, run *DriftRun, stage bool, r Runner) error {
	id, err := NewUID(tx, run.Started)
	if err != nil {
		return err
	}
	run.ID = id
	if stage {
		stg := staging.New(resources.NewCatalog(tx), r.Now).By(r.Actor)
		for _, res := range run.Results {
			if res.Status != DriftDrifted {
				continue
			}
			e, err := stg.StageRefresh(res.Resource, res.Action, DriftCause)
			if err != nil {
				return fmt.Errorf("stage %s.%s: %w", res.Resource, res.Action, err)
			}
			// An entry staged for another reason (a change an operator
			// made) is kept as it is: it runs anyway with the committed
			// values plus that change, as an intentional change, so it is
			// neither listed here nor marked corrective.
			if e.Cause == DriftCause {
				run.Staged = append(run.Staged, e.Key)
			}
		}
	}
	raw, err := json.Marshal(run)
	if err != nil {
		return err
	}
	return tx.Put(store.Plans, driftKey(id), raw)
}

// DriftRuns returns the kept drift runs, oldest first.
func DriftRuns(tx *store.Tx) ([]*DriftRun, error) {
	var out []*DriftRun
	err := tx.ForEach(store.Plans, "driftrun/", func(k string, raw []byte) error {
		var d DriftRun
		if err := json.Unmarshal(raw, &d); err != nil {
			return store.Damagedf("drift record %s does not decode: %v", k, err)
		}
		out = append(out, &d)
		return nil
	})
	return out, err
}

// GetDriftRun returns the drift run id ("last" is the latest).
func GetDriftRun(tx *store.Tx, id string) (*DriftRun, error) {
	if id == "last" {
		k, _, err := tx.Last(store.Plans, "driftrun/")
		if errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("%w: no drift run yet (run solar drift)", ErrNoDriftRun)
		}
		if err != nil {
			return nil, err
		}
		id = strings.TrimPrefix(k, "driftrun/")
	}
	raw, err := tx.Get(store.Plans, driftKey(id))
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w: %s (solar drift list shows them)", ErrNoDriftRun, id)
	}
	if err != nil {
		return nil, err
	}
	var d DriftRun
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, store.Damagedf("drift record %s does not decode: %v", id, err)
	}
	return &d, nil
}
