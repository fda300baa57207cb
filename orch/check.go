package orch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/solarops/solar/events"
	"github.com/solarops/solar/orch/handler"
	"github.com/solarops/solar/orch/walk"
	"github.com/solarops/solar/planner"
	"github.com/solarops/solar/store"
)

// What a check run predicts for a task.
const (
	WouldChange    = "would change"
	WouldNotChange = "would not change"
	Unknown        = "unknown"       // no check support: treated as changed
	WouldNotRun    = "would not run" // Prediction.Why says why
	CheckFailed    = "check failed"  // the check script failed: Why has its error
)

// Prediction is what a check run predicts for one task.
type Prediction struct {
	Task string `json:"task"`
	What string `json:"prediction"`
	// Why explains: the rule that fires for a triggered task, the reason
	// a task would not run, the error of a failed check.
	Why string    `json:"why"`
	At  time.Time `json:"at"`
}

func checkPrefix(uid string) string { return "check/" + uid + "/" }

// Check walks plan r.UID as a run would, without changing anything: each
// task whose base supports check mode for its action runs its script with
// SOLAR_CHECK=1 (which must change nothing and say whether it would);
// a task without support is UNKNOWN and counts as changed; noop tasks would
// not change. The event truth table applies to the predicted results, so
// triggered tasks are predicted to run or not. Nothing is committed, no
// staged entry or task state changes; the predictions are kept with the
// plan (Predictions) for orch report. Stop and ctx behave as for Run.
func (r *Runner) Check(ctx context.Context, stop <-chan struct{}) (*Record, []Prediction, error) {
	sdb, done := r.openStore()
	defer done()
	defer r.settle()
	var (
		rec   *Record
		infos map[string]*taskInfo
	)
	err := sdb.View(func(tx *store.Tx) error {
		var err error
		if rec, err = Load(tx, r.UID); err != nil {
			return err
		}
		if err := RefuseRunning(tx, r.UID); err != nil {
			return err
		}
		if err := refuseStaleCheck(tx, rec); err != nil {
			return err
		}
		infos, err = r.prepare(tx, rec)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	sdb.Close() // nothing to write until the end: let others in
	preds, err := r.checkWalk(ctx, stop, rec, infos)
	if err != nil {
		return rec, nil, err
	}
	err = sdb.Update(func(tx *store.Tx) error {
		if err := tx.DeletePrefix(store.Plans, checkPrefix(rec.UID)); err != nil {
			return err
		}
		for _, p := range preds {
			raw, err := json.Marshal(p)
			if err != nil {
				return err
			}
			if err := tx.Put(store.Plans, checkPrefix(rec.UID)+p.Task, raw); err != nil {
				return err
			}
		}
		return nil
	})
	return rec, preds, err
}

// checkWalk walks rec's prepared tasks in check mode (Runner.Started told
// first) and returns what each would do.
func (r *Runner) checkWalk(ctx context.Context, stop <-chan struct{}, rec *Record, infos map[string]*taskInfo) ([]Prediction, error) {
	if r.Started != nil {
		r.Started(rec, nil)
	}
	c := &checker{infos: infos, unknown: map[string]bool{}}
	tasks, err := walkTasks(rec, infos, r.PerNode)
	if err != nil {
		return nil, err
	}
	w := &walk.Walker{Concurrency: r.Concurrency, Run: c.run, Progress: r.Progress, Now: r.Now}
	states, err := w.Walk(ctx, tasks, nil, stop)
	if err != nil {
		return nil, err
	}
	return predict(rec, states, c.unknown, r.Now()), nil
}

// checker runs the tasks of a check walk.
type checker struct {
	infos   map[string]*taskInfo
	mu      sync.Mutex
	unknown map[string]bool
}

func (c *checker) run(ctx context.Context, t *walk.Task) walk.Outcome {
	info := c.infos[t.ID]
	switch {
	case info.problem != "":
		return walk.Outcome{Err: errors.New(info.problem), Attempts: 1}
	case info.noop:
		return walk.Outcome{Attempts: 1}
	case !info.checks:
		c.mu.Lock()
		c.unknown[t.ID] = true
		c.mu.Unlock()
		return walk.Outcome{Changed: true, Attempts: 1}
	}
	res, err := info.handler.Run(ctx, info.checkRequest(t.ID))
	if err != nil {
		return walk.Outcome{Err: err, Attempts: 1}
	}
	return walk.Outcome{Changed: res.Changed, Attempts: 1}
}

// checkRequest is the request of task id's check: its script in check
// mode with the inputs it was prepared with (its pin's, in a pinned plan).
func (ti *taskInfo) checkRequest(id string) handler.Request {
	return handler.Request{
		Resource: ti.node.Resource, Action: ti.node.Action, Task: id,
		BaseDir: ti.baseDir, Script: ti.script, Inputs: ti.inputsFrom(ti.inputs), Sensitive: ti.sensitive,
		Location: ti.location, Timeout: ti.timeout, Check: true,
	}
}

// predict turns a check walk's states into predictions, in plan order.
func predict(rec *Record, states map[string]State, unknown map[string]bool, now time.Time) []Prediction {
	fired := firedRules(rec, states)
	out := make([]Prediction, 0, len(rec.Plan.Nodes))
	for _, n := range rec.Plan.Nodes {
		st := states[n.ID]
		p := Prediction{Task: n.ID, At: now.UTC()}
		switch st.Status {
		case StatusSuccess:
			p.What = WouldChange
			if unknown[n.ID] {
				p.What, p.Why = Unknown, "no check support for "+n.Action+": treated as changed"
			}
		case StatusNoop:
			p.What = WouldNotChange
		case StatusError:
			p.What, p.Why = CheckFailed, st.Err
		default:
			p.What, p.Why = WouldNotRun, st.Reason
		}
		if !n.Staged && (st.Status == StatusSuccess || st.Status == StatusNoop || st.Status == StatusError) && fired[n.ID] != "" {
			if p.Why != "" {
				p.Why += "; "
			}
			p.Why += "triggered by " + fired[n.ID]
		}
		out = append(out, p)
	}
	return out
}

// firedRules names, for each triggered task, the react rules whose events
// happened in the walk.
func firedRules(rec *Record, states map[string]State) map[string]string {
	rules := map[string][]string{}
	for _, e := range rec.Plan.Edges {
		if e.Kind != planner.EdgeReact {
			continue
		}
		var res events.Result
		switch states[e.From].Status {
		case StatusSuccess:
			res = events.ResultChanged
		case StatusNoop:
			res = events.ResultOK
		case StatusError:
			res = events.ResultFailed
		default:
			continue
		}
		if e.Event.Matches(res) {
			rules[e.To] = append(rules[e.To], e.Rule)
		}
	}
	out := make(map[string]string, len(rules))
	for id, rs := range rules {
		sort.Strings(rs)
		out[id] = rs[0]
		if len(rs) > 1 {
			out[id] = fmt.Sprintf("%s (and %d more)", rs[0], len(rs)-1)
		}
	}
	return out
}

// Predictions returns what the last check of plan uid predicted, by task;
// empty when it was never checked.
func Predictions(tx *store.Tx, uid string) (map[string]Prediction, error) {
	out := map[string]Prediction{}
	p := checkPrefix(uid)
	err := tx.ForEach(store.Plans, p, func(k string, v []byte) error {
		var pr Prediction
		if err := json.Unmarshal(v, &pr); err != nil {
			return store.Damagedf("check record %s does not decode: %v", k, err)
		}
		out[pr.Task] = pr
		return nil
	})
	return out, err
}
