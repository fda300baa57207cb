package orch

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/solarops/solar/internal/invalid"
	"github.com/solarops/solar/orch/walk"
	"github.com/solarops/solar/planner"
	"github.com/solarops/solar/store"
	"github.com/solarops/solar/store/kv"
)

// The fleet (docs/architecture.md, "The fleet"): on a store that has one
// (kv.Fleet, PostgreSQL), a submitted plan's tasks are rows that runners on
// any machine claim under leases, run, and complete. This file is what the
// store's transactions do with those rows: Submit writes them, complete
// records a task's end and decides its successors (the walker's truth
// table, walk.Decide) where its last predecessor ends, settle closes a
// plan that finished or was stopped. fleetrun.go is the runner.

// ErrNoFleet means a fleet command met a store whose plans have one runner
// each (a bbolt file).
var ErrNoFleet = invalid.New("runners need a PostgreSQL store (a bbolt file has one runner per plan: use solar orch run-once)")

// fleetTopic is the notification runners listen on: a plan submitted, a
// task made ready, a plan stopped. A hint only: runners poll too.
const fleetTopic = "fleet"

// SubmitOptions are the limits and preparation of a submitted plan.
type SubmitOptions struct {
	// Concurrency and PerNode are the plan's limits across every runner:
	// at most that many of its tasks at once, and on one node.
	Concurrency, PerNode int
	By                   string // who submits (actor.Of)
	// Prepare, if set, changes the recorded states before the plan is
	// handed over (as Runner.Prepare: resets, the check that the plan is
	// still what was reviewed), in Submit's transaction.
	Prepare func(tx *store.Tx, rec *Record, states map[string]State) (map[string]State, error)
	// Settings prepares the tasks (their nodes and semaphores) as a run
	// would: its Shell, CacheDir and SSH are used.
	Settings Runner
}

// Submit hands plan uid to the runners of db's fleet, in one transaction:
// every task gets a row (done, waiting for predecessors, or ready, as the
// truth table decides), tasks a stop or a kill ended are pending again,
// and the runners are told. It returns the plan and the states it starts
// from. A plan a process runs outside the fleet is refused (ErrRunning).
func Submit(db *store.DB, uid string, o SubmitOptions) (*Record, map[string]State, error) {
	var rec *Record
	var states map[string]State
	err := db.Update(func(tx *store.Tx) error {
		ftx, ok := tx.Fleet()
		if !ok {
			return ErrNoFleet
		}
		var err error
		if rec, err = Load(tx, uid); err != nil {
			return err
		}
		if rr, live := liveRunner(tx, uid); live {
			return rr.busy(uid)
		}
		if err := refuseResubmit(ftx, uid); err != nil {
			return err
		}
		if states, err = States(tx, rec); err != nil {
			return err
		}
		if o.Prepare != nil {
			if states, err = o.Prepare(tx, rec, states); err != nil {
				return err
			}
		}
		return submitRows(tx, ftx, rec, states, o)
	})
	return rec, states, err
}

// ErrSubmitted means a plan is already submitted and live: its runners
// run it (follow it, or stop it first).
var ErrSubmitted = errors.New("plan is already submitted to the runners")

// refuseResubmit refuses to submit again a plan that is live, or whose
// tasks still run after a stop.
func refuseResubmit(ftx kv.FleetTx, uid string) error {
	p, ok, err := ftx.FleetPlan(uid)
	if err != nil || !ok {
		return err
	}
	if p.Live {
		return fmt.Errorf("%w: plan %s, by %s", ErrSubmitted, uid, p.By)
	}
	rows, err := ftx.FleetRows(uid)
	if err != nil {
		return err
	}
	for _, r := range rows {
		if r.State == kv.RowClaimed {
			return fmt.Errorf("%w: plan %s is stopping: %s still runs on runner %s; wait for it, then submit again",
				ErrRunning, uid, r.Task, runnerOf(r.Owner))
		}
	}
	return nil
}

// submitRows writes plan rec's rows from states, and what follows from
// them, in tx.
func submitRows(tx *store.Tx, ftx kv.FleetTx, rec *Record, states map[string]State, o SubmitOptions) error {
	uid := rec.UID
	r := o.Settings
	r.UID = uid
	r.defaults()
	infos, err := r.prepare(tx, rec)
	if err != nil {
		return err
	}
	defer r.closeTransports()
	tasks, err := walkTasks(rec, infos, max(o.PerNode, 1))
	if err != nil {
		return err
	}
	bases, err := attemptBases(tx, uid, states)
	if err != nil {
		return err
	}
	g := newFleetGraph(tasks)
	now := r.Now()
	for id, st := range states {
		if !st.Status.Finished() || Stopped(st) {
			st = State{Status: StatusPending}
			states[id] = st
			if err := PutState(tx, uid, id, st); err != nil {
				return err
			}
		}
	}
	rows := make([]kv.FleetTask, 0, len(tasks))
	var free []string // not done, waiting for no predecessor: decided below
	for i := range tasks {
		t := &tasks[i]
		row := kv.FleetTask{Task: t.ID, Weight: t.Weight, Slots: fleetSlots(uid, t, o.Concurrency), Attempts: bases[t.ID]}
		if loc := infos[t.ID].location; loc != "" {
			row.Node = loc
		}
		if states[t.ID].Status.Finished() {
			row.State = kv.RowDone
		} else {
			for _, e := range t.In {
				if !states[e.From].Status.Finished() {
					row.Waiting++
				}
			}
			if row.Waiting == 0 {
				free = append(free, t.ID)
			}
		}
		rows = append(rows, row)
	}
	plan := kv.FleetPlan{UID: uid, Live: true, Concurrency: o.Concurrency, PerNode: o.PerNode, By: o.By, Submitted: now}
	if err := ftx.FleetSubmit(plan, rows); err != nil {
		return err
	}
	if _, err := g.release(tx, ftx, uid, free, now); err != nil {
		return err
	}
	if err := SetOpen(tx, uid, true); err != nil {
		return err
	}
	if err := tx.Delete(store.Plans, stopKey(uid)); err != nil {
		return err
	}
	return tx.Notify(fleetTopic, uid)
}

// fleetSlots are the counted limits task t holds while it runs, as the
// fleet names them: its plan's concurrency, its node's (per plan), its
// resource's and its semaphores (across plans).
func fleetSlots(uid string, t *walk.Task, concurrency int) []kv.Slot {
	var out []kv.Slot
	if concurrency > 0 {
		out = append(out, kv.Slot{Name: "plan/" + uid, Count: concurrency})
	}
	for _, l := range t.Limits {
		switch l.Kind {
		case walk.LimitNode:
			out = append(out, kv.Slot{Name: "node/" + uid + "/" + l.Name, Count: l.Count})
		case walk.LimitResource:
			out = append(out, kv.Slot{Name: "resource/" + l.Name, Count: 1})
		case walk.LimitSema:
			out = append(out, kv.Slot{Name: "sema/" + l.Name, Count: l.Count})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// fleetGraph is a plan's graph as the fleet's decisions need it: each
// task's incoming edges (with their triggers) and earlier instances, and
// its successors.
type fleetGraph struct {
	tasks map[string]*walk.Task
	out   map[string][]string
}

func newFleetGraph(tasks []walk.Task) *fleetGraph {
	g := &fleetGraph{tasks: make(map[string]*walk.Task, len(tasks)), out: map[string][]string{}}
	for i := range tasks {
		t := &tasks[i]
		g.tasks[t.ID] = t
		for _, e := range t.In {
			g.out[e.From] = append(g.out[e.From], t.ID)
		}
	}
	return g
}

func (g *fleetGraph) earlier(id string) []string {
	if t := g.tasks[id]; t != nil {
		return t.Earlier
	}
	return nil
}

// decide applies the truth table to task id, whose predecessors have all
// finished, from their states in tx.
func (g *fleetGraph) decide(tx *store.Tx, uid, id string) (State, bool, error) {
	t := g.tasks[id]
	keys := make([]store.Key, 0, len(t.In))
	for _, e := range t.In {
		keys = append(keys, store.Key{Bucket: store.Plans, Key: taskKey(uid, e.From)})
	}
	if err := tx.Prefetch(keys...); err != nil {
		return State{}, false, err
	}
	var failed error
	st, run := walk.Decide(t, g.earlier, func(p string) State {
		s, err := TaskState(tx, uid, p)
		if err != nil && failed == nil {
			failed = err
		}
		return s
	})
	return st, run, failed
}

// release decides the tasks free, which wait for no predecessor any more:
// ready to be claimed, or skipped (their state written), which in turn
// counts them off their own successors, and so on. It returns how many
// it made ready.
func (g *fleetGraph) release(tx *store.Tx, ftx kv.FleetTx, uid string, free []string, now time.Time) (int, error) {
	var ready, done []string
	for len(free) > 0 {
		id := free[len(free)-1]
		free = free[:len(free)-1]
		cur, err := TaskState(tx, uid, id)
		if err != nil {
			return 0, err
		}
		st, run := cur, false
		// A task another command skipped stays skipped (apply's rule).
		if !cur.Status.Finished() {
			if st, run, err = g.decide(tx, uid, id); err != nil {
				return 0, err
			}
		}
		if run {
			ready = append(ready, id)
			continue
		}
		if !cur.Status.Finished() {
			st.End = now
			if err := PutState(tx, uid, id, st); err != nil {
				return 0, err
			}
		}
		done = append(done, id)
		next, err := g.countDown(ftx, uid, id)
		if err != nil {
			return 0, err
		}
		free = append(free, next...)
	}
	// Each set is a round trip: a task with no successor to decide (the
	// last of a chain, any independent task) costs none.
	if len(ready) > 0 {
		if err := ftx.FleetSet(uid, ready, true); err != nil {
			return 0, err
		}
	}
	if len(done) > 0 {
		return len(ready), ftx.FleetSet(uid, done, false)
	}
	return len(ready), nil
}

// countDown counts finished task id off its successors and returns those
// it was the last of.
func (g *fleetGraph) countDown(ftx kv.FleetTx, uid, id string) ([]string, error) {
	succ := g.out[id]
	if len(succ) == 0 {
		return nil, nil
	}
	return ftx.FleetCountDown(uid, succ)
}

// settle closes plan uid in tx once nothing of it runs and nothing more
// will: every row done (the plan is closed if nothing is left to do), or
// the plan stopped (tasks that did not start are SKIPPED "stopped", and
// resume or submit runs them). The plan's rows go. It reports whether it
// settled the plan.
func settle(tx *store.Tx, ftx kv.FleetTx, uid string, now time.Time) (bool, error) {
	p, ok, err := ftx.FleetPlan(uid)
	if err != nil || !ok {
		return false, err
	}
	rows, err := ftx.FleetRows(uid)
	if err != nil {
		return false, err
	}
	var left []string
	for _, row := range rows {
		switch row.State {
		case kv.RowClaimed:
			return false, nil
		case kv.RowWaiting, kv.RowReady:
			left = append(left, row.Task)
		}
	}
	if len(left) > 0 && p.Live {
		return false, nil
	}
	for _, id := range left {
		cur, err := TaskState(tx, uid, id)
		if err != nil {
			return false, err
		}
		if cur.Status.Finished() {
			continue
		}
		if err := PutState(tx, uid, id, State{Status: StatusSkipped, Reason: ReasonStopped, End: now}); err != nil {
			return false, err
		}
	}
	rec, err := Load(tx, uid)
	if err != nil {
		return false, err
	}
	states, err := States(tx, rec)
	if err != nil {
		return false, err
	}
	if err := SetOpen(tx, uid, !Done(states)); err != nil {
		return false, err
	}
	return true, ftx.FleetDrop(uid)
}

// Settle closes plan uid if nothing of it runs and nothing more will (see
// settle): the runners call it when they find nothing to claim, a
// follower when the counts say so, stop when nothing runs.
func Settle(db *store.DB, uid string, now time.Time) (bool, error) {
	settled := false
	err := db.Update(func(tx *store.Tx) error {
		ftx, ok := tx.Fleet()
		if !ok {
			return ErrNoFleet
		}
		var err error
		settled, err = settle(tx, ftx, uid, now)
		return err
	})
	return settled, err
}

// fleetStop stops submitted plan uid in tx, if it was submitted: no task
// of it is claimed any more, and with kill its epoch moves on, which tells
// the runners to kill what they run of it. Reports whether it was.
func fleetStop(tx *store.Tx, uid string, kill bool) (bool, error) {
	ftx, ok := tx.Fleet()
	if !ok {
		return false, nil
	}
	if _, ok, err := ftx.FleetPlan(uid); err != nil || !ok {
		return false, err
	}
	if err := ftx.FleetSetPlan(uid, false, kill, 0); err != nil {
		return false, fmt.Errorf("stop plan %s in the fleet: %w", uid, err)
	}
	return true, tx.Notify(fleetTopic, uid)
}

// defaults fills in what a Runner used outside Run needs.
func (r *Runner) defaults() {
	if r.Now == nil {
		r.Now = time.Now
	}
}

// closeTransports closes the SSH connections the runner's preparation
// opened.
func (r *Runner) closeTransports() {
	for _, tr := range r.transports {
		tr.Close()
	}
	r.transports = nil
}

// settleIdle settles submitted plan uid if its counts say nothing of it
// runs or will (a stop found nothing running).
func settleIdle(db *store.DB, uid string) (bool, error) {
	fleet, ok := db.Fleet()
	if !ok {
		return false, nil
	}
	p, ok, err := fleet.PlanState(context.Background(), uid)
	if err != nil || !ok || p.Claimed > 0 || p.Live && p.Waiting+p.Ready > 0 {
		return false, err
	}
	return Settle(db, uid, time.Now())
}

// refuseSubmitted fails when plan uid is submitted to the fleet and still
// live: changes that cannot reach its runners wait for it to stop.
func refuseSubmitted(tx *store.Tx, uid string) error {
	ftx, ok := tx.Fleet()
	if !ok {
		return nil
	}
	p, ok, err := ftx.FleetPlan(uid)
	if err != nil || !ok || !p.Live {
		return err
	}
	return fmt.Errorf("%w: plan %s is submitted to the runners (by %s); wait for it to finish, or stop it with solar orch stop %s",
		ErrRunning, uid, p.By, uid)
}

// fleetSkipped takes tasks ids, which another command skipped, off plan
// uid's rows if it was submitted: done, counted off their successors,
// which are decided. A task a runner has claimed is refused.
func fleetSkipped(tx *store.Tx, uid string, ids []string, now time.Time) error {
	ftx, ok := tx.Fleet()
	if !ok {
		return nil
	}
	if _, ok, err := ftx.FleetPlan(uid); err != nil || !ok {
		return err
	}
	rows, err := ftx.FleetRows(uid)
	if err != nil {
		return err
	}
	byTask := make(map[string]kv.FleetRow, len(rows))
	for _, r := range rows {
		byTask[r.Task] = r
	}
	var done []string
	for _, id := range ids {
		row := byTask[id]
		switch row.State {
		case kv.RowClaimed:
			return fmt.Errorf("%w: %s already started in plan %s, on runner %s; wait for it to finish, or stop the plan with solar orch stop %s",
				ErrRunning, id, uid, runnerOf(row.Owner), uid)
		case kv.RowWaiting, kv.RowReady:
			done = append(done, id)
		}
	}
	if len(done) == 0 {
		return nil
	}
	if err := ftx.FleetSet(uid, done, false); err != nil {
		return err
	}
	rec, err := Load(tx, uid)
	if err != nil {
		return err
	}
	g := planGraph(rec)
	for _, id := range done {
		next, err := g.countDown(ftx, uid, id)
		if err != nil {
			return err
		}
		if _, err := g.release(tx, ftx, uid, next, now); err != nil {
			return err
		}
	}
	return nil
}

// planGraph is plan rec's graph for the fleet's decisions (no limits).
func planGraph(rec *Record) *fleetGraph {
	in := make(map[string][]walk.InEdge, len(rec.Plan.Nodes))
	for i := range rec.Plan.Edges {
		e := &rec.Plan.Edges[i]
		in[e.To] = append(in[e.To], walk.InEdge{From: e.From, On: triggerOf(e)})
	}
	tasks := make([]walk.Task, 0, len(rec.Plan.Nodes))
	for _, n := range rec.Plan.Nodes {
		tasks = append(tasks, walk.Task{ID: n.ID, Weight: n.Weight, Reactive: !n.Staged, In: in[n.ID], Earlier: earlierOf(n)})
	}
	return newFleetGraph(tasks)
}

// earlierOf names the earlier instances of task n's action.
func earlierOf(n planner.Node) []string {
	var earlier []string
	for i := 0; i < n.Instance; i++ {
		earlier = append(earlier, fmt.Sprintf("%s.%s#%d", n.Resource, n.Action, i))
	}
	return earlier
}
