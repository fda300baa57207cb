package orch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/solarops/solar/bases"
	"github.com/solarops/solar/orch/handler"
	"github.com/solarops/solar/orch/walk"
	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/store"
)

// Batches (autogroup). A base may give an action a batch script
// (resources.Base.Batch). The tasks of that action whose pins name the
// same base digest and the same node form a group (walk.Task.Group); the
// walker runs those of one group that are ready at the same moment, with
// no path between them in the plan, as one batch (Walker.RunBatch), at
// most the base's batch_max at a time, holding the union of their limits
// and counting as one task against the concurrency.
//
// runBatch runs the batch script once, through the tasks' handler and
// transport, with every member prepared exactly as its single attempt
// would be (its pin's inputs, secrets included, with the outputs earlier
// tasks sent). From there on every member is a task of its own: its
// result, its attempt record (numbered as its single attempt would be,
// with the batch's id and members), its log (the batch's output, marked),
// its outputs and the commit of its staged entry. A member that failed
// and has retries left retries alone through the action's single script,
// the batch counting as its first attempt.
//
// Only a run of this process batches: check mode, drift and the fleet's
// runners (which claim tasks one by one) run every task alone. A node
// whose transport cannot run batches (handler.ErrNoBatch) runs the
// members alone, side by side.

// noBatchResult is the error of a member the batch's result left out.
const noBatchResult = "no result from batch"

// batchGroup is what the tasks of one group share: the walker's group key,
// the base's batch script for the action and its bound.
type batchGroup struct {
	key    string // digest/action/location; a variant adds /N (splitByHandler)
	script string
	max    int
}

// batchGroups makes one batchGroup per base digest, action and location.
type batchGroups struct {
	byKey map[string]*batchGroup
}

// of returns the group of the tasks of action of the base digest on loc.
func (g *batchGroups) of(digest, action, loc, script string, max int) *batchGroup {
	key := digest + "/" + action + "/" + loc
	if b, ok := g.byKey[key]; ok {
		return b
	}
	if g.byKey == nil {
		g.byKey = map[string]*batchGroup{}
	}
	b := &batchGroup{key: key, script: script, max: max}
	g.byKey[key] = b
	return b
}

// splitByHandler gives the tasks of a group that reach their node through
// another handler than the group's first task (the node's own update is in
// the plan: wireTransports) a group of their own: a batch runs through one
// handler.
func (g *batchGroups) splitByHandler(rec *Record, infos map[string]*taskInfo) {
	if len(g.byKey) == 0 {
		return
	}
	seen := map[*batchGroup][]handler.Handler{}
	split := map[*batchGroup][]*batchGroup{}
	for i := range rec.Plan.Nodes {
		info := infos[rec.Plan.Nodes[i].ID]
		b := info.batch
		if b == nil {
			continue
		}
		k := slices.Index(seen[b], info.handler)
		if k < 0 {
			k = len(seen[b])
			seen[b] = append(seen[b], info.handler)
			if k > 0 {
				split[b] = append(split[b], &batchGroup{key: b.key + "/" + strconv.Itoa(k), script: b.script, max: b.max})
			}
		}
		if k > 0 {
			info.batch = split[b][k-1]
		}
	}
}

// member is one task of a batch as runBatch runs it.
type member struct {
	t      *walk.Task
	info   *taskInfo
	number int            // its attempt's number
	inputs map[string]any // what it runs with
	err    error          // why it failed in the batch; nil if it did not
	out    walk.Outcome   // its outcome, once decided
}

// runBatch runs tasks, two or more of one group, as one batch
// (Walker.RunBatch), and returns their outcomes in their order.
func (a *attemptRunner) runBatch(ctx context.Context, ts []*walk.Task) []walk.Outcome {
	ms := make([]*member, len(ts))
	for i, t := range ts {
		ms[i] = &member{t: t, info: a.infos[t.ID], number: a.bases[t.ID] + 1}
	}
	unlock, err := a.lockBatch(ctx, ms)
	if err != nil {
		outs := make([]walk.Outcome, len(ms))
		for i := range outs {
			outs[i] = walk.Outcome{Err: err, Attempts: 1}
		}
		return outs
	}
	alone := a.batchOnce(ctx, ms)
	_ = unlock()
	// The members that go on alone hold their own locks: a resource's
	// lock is not taken twice by one run.
	var wg sync.WaitGroup
	for _, m := range ms {
		switch {
		case alone:
			wg.Add(1)
			go func() {
				defer wg.Done()
				m.out = a.runTries(ctx, m.t, m.info.retry, a.bases[m.t.ID], 0)
			}()
		case m.err == nil:
		case m.info.retry > 0 && retryable(ctx, m.err):
			a.noteRetry(m.t.ID, m.number, m.info.delay, m.err)
			wg.Add(1)
			go func() {
				defer wg.Done()
				m.out = a.retryAlone(ctx, m)
			}()
		default:
			m.out = walk.Outcome{Err: m.err, Attempts: 1}
			if ctx.Err() != nil {
				m.out.Err = errors.New(killed)
			}
		}
	}
	wg.Wait()
	outs := make([]walk.Outcome, len(ms))
	for i, m := range ms {
		outs[i] = m.out
	}
	return outs
}

// retryAlone runs the retries member m has left after its failed batch,
// through the action's single script.
func (a *attemptRunner) retryAlone(ctx context.Context, m *member) walk.Outcome {
	if !sleepCtx(ctx, m.info.delay) {
		return walk.Outcome{Err: ctx.Err(), Attempts: 1}
	}
	out := a.runTries(ctx, m.t, m.info.retry-1, m.number, 0)
	out.Attempts++
	return out
}

// retryable reports whether another attempt may help after err.
func retryable(ctx context.Context, err error) bool {
	return ctx.Err() == nil && !errors.Is(err, handler.ErrNeedsOperator)
}

// noteRetry tells Runner.Note that task's attempt number failed with err
// and is retried after delay.
func (a *attemptRunner) noteRetry(task string, number int, delay time.Duration, err error) {
	if a.r.Note == nil {
		return
	}
	msg := fmt.Sprintf("%s attempt %d failed: %s; retrying", task, number, oneLine(err.Error()))
	if delay > 0 {
		msg += " in " + delay.String()
	}
	a.r.Note(msg)
}

// lockBatch takes the locks of every member's resource, in name order, and
// one slot of each limit any member is under (their union), after them:
// every run takes resources before limits, so no two runs wait in a ring.
func (a *attemptRunner) lockBatch(ctx context.Context, ms []*member) (func() error, error) {
	names := make([]string, len(ms))
	var union []walk.Limit
	for i, m := range ms {
		names[i] = m.info.node.Resource
		for _, l := range a.limits(m.t) {
			if !slices.ContainsFunc(union, func(u walk.Limit) bool { return u.Kind == l.Kind && u.Name == l.Name }) {
				union = append(union, l)
			}
		}
	}
	slices.Sort(names)
	var unlocks []func() error
	release := func() error {
		for i := len(unlocks) - 1; i >= 0; i-- {
			_ = unlocks[i]()
		}
		return nil
	}
	for i, name := range names {
		var limits []walk.Limit
		if i == len(names)-1 {
			limits = union
		}
		u, err := a.locks.lock(ctx, name, limits)
		if err != nil {
			_ = release()
			return nil, err
		}
		unlocks = append(unlocks, u)
	}
	return release, nil
}

// batchOnce runs the batch script once for ms and sets each member's err,
// or its outcome when it succeeded. It reports true, having run nothing,
// when the node cannot run batches: the members then run alone.
func (a *attemptRunner) batchOnce(ctx context.Context, ms []*member) (alone bool) {
	first := ms[0].info
	id := "b-" + newToken()[:8]
	names := make([]string, len(ms))
	members := make([]handler.Member, len(ms))
	var gate func() error
	timeout, unbounded := first.timeout, false
	for i, m := range ms {
		names[i] = m.info.node.Resource
		m.inputs = a.led.inputs(m.info)
		members[i] = handler.Member{Resource: m.info.node.Resource, Task: m.t.ID, Inputs: m.inputs, Sensitive: m.info.sensitive}
		if g := a.led.gateOf(m.t); g != nil {
			gate = g
		}
		// The batch's time limit is its members' largest; none if one has none.
		unbounded = unbounded || m.info.timeout == 0
		timeout = max(timeout, m.info.timeout)
	}
	if unbounded {
		timeout = 0
	}
	// Every member takes its own start of each rate it names, as it would
	// alone: a batch of n takes n.
	for _, m := range ms {
		if err := a.takeRates(ctx, m.t.ID, m.info, 1); err != nil {
			for _, x := range ms {
				x.err = err
			}
			return false
		}
	}
	head := fmt.Sprintf("batch %s of %d: %s", id, len(ms), strings.Join(names, ", "))
	began := a.r.Now()
	for _, m := range ms {
		a.logs.begin(m.t.ID, m.number)
	}
	res, err := first.handler.Run(ctx, handler.Request{
		Gate:   gate,
		Action: first.node.Action, Task: id, BaseDir: first.baseDir, Script: first.batch.script,
		Location: first.location, Timeout: timeout, Members: members,
		Started: func(g handler.Procs) {
			for _, m := range ms {
				a.led.recordProcs(m.t.ID, g)
			}
		},
		Output: func(l handler.Line) { a.batchOutput(ms, markBatch(l)) },
	})
	for _, m := range ms {
		a.logs.end(m.t.ID)
	}
	if errors.Is(err, handler.ErrNoBatch) {
		return true
	}
	if a.r.Note != nil {
		ids := make([]string, len(ms))
		for i, m := range ms {
			ids[i] = m.t.ID
		}
		a.r.Note(strings.Join(ids, ", ") + " ran as one batch (" + id + ")")
	}
	log := make([]handler.Line, 0, len(res.Log)+1)
	log = append(log, handler.Line{At: began, Stream: '!', Text: head})
	for _, l := range res.Log {
		log = append(log, markBatch(l))
	}
	end := a.r.Now()
	for _, m := range ms {
		a.keepLog(m.t.ID, log, AttemptRecord{Number: m.number, Actor: a.r.Actor, Host: a.r.Host, Run: a.runID, Runner: a.runner,
			Start: began, End: end, Batch: id, BatchMembers: names})
		a.settleMember(m, res, err)
	}
	return false
}

// settleMember decides member m's end in a batch that returned res and
// err: its own result if the batch gave one, else the batch's failure.
func (a *attemptRunner) settleMember(m *member, res handler.Result, err error) {
	r, ok := res.Members[m.info.node.Resource]
	switch {
	case res.Members == nil && err != nil:
		m.err = err
	case !ok:
		m.err = errors.New(noBatchResult)
	case r.Failed:
		m.err = errors.New(r.Error)
	default:
		if m.err = m.info.checkOutputs(r.Outputs); m.err == nil {
			a.led.keepRan(m.t.ID, m.inputs, r.Outputs)
			m.out = walk.Outcome{Changed: r.Changed, Attempts: 1}
		}
	}
}

// batchOutput passes a line of a running batch on to every member's log
// stream, and to Runner.Output once, as the first member's.
func (a *attemptRunner) batchOutput(ms []*member, l handler.Line) {
	for _, m := range ms {
		a.logs.line(m.t.ID, l)
	}
	if a.r.Output != nil {
		a.r.Output(ms[0].t.ID, l)
	}
}

// markBatch marks a line of a batch's output as such in its members' logs.
func markBatch(l handler.Line) handler.Line {
	l.Text = "[batch] " + l.Text
	return l
}

// sleepCtx waits d, or less if ctx is done first, reporting whether it
// waited all of d.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// showBatchGroups returns, by task id, the group each task of a pinned
// plan may run in a batch with (orch show): "BASE@DIGEST/ACTION/NODE",
// "local" for this machine, for the tasks whose pinned base has a batch
// script for their action and which share their group with another task
// of the plan. Whether they do batch is decided as they run: only tasks
// ready at the same moment do.
func showBatchGroups(tx *store.Tx, rec *Record, pins map[string]*Pin) map[string]string {
	groups := map[string]string{}
	if pins == nil {
		return groups
	}
	rb := newRunBases(tx, "")
	parsed := map[string]*resources.Base{}
	count := map[string]int{}
	for _, n := range rec.Plan.Nodes {
		pin := pins[n.ID]
		if pin == nil || pin.Base.Digest == "" {
			continue
		}
		b, ok := parsed[pin.Base.Digest]
		if !ok {
			if rbase := rb.get(pin.Base.Name, pin.Base.Digest); rbase.problem == "" {
				b, _ = resources.FromContent(rbase.content, pin.Base.Name, "", pin.Base.Name)
			}
			parsed[pin.Base.Digest] = b
		}
		if b == nil || b.Handler == "noop" {
			continue
		}
		if _, ok := b.BatchScript(n.Action); !ok {
			continue
		}
		loc, _ := pin.Inputs[resources.LocationInput].(string)
		g := pin.Base.Name + "@" + bases.Short(pin.Base.Digest) + "/" + n.Action + "/" + cmp.Or(loc, "local")
		groups[n.ID] = g
		count[g]++
	}
	for id, g := range groups {
		if count[g] < 2 {
			delete(groups, id)
		}
	}
	return groups
}
