package orch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/solarops/solar/orch/handler"
	"github.com/solarops/solar/orch/walk"
	"github.com/solarops/solar/store"
	"github.com/solarops/solar/store/kv"
)

// attemptRunner runs tasks (Walker.Run): a task's attempts, with its
// retries, delay and timeout, each through its handler and transport,
// under its resource's lock and its node's and semaphores' slots. It sees
// the store only through the ledger (the inputs an attempt runs with, the
// gate it waits for, and what it leaves to write: its final log, the
// record of its process group, its outputs), except for the lines of
// running attempts, which streamLogs writes on a goroutine of its own.
//
// run is called on the walker's goroutine or a task's, for many tasks at
// once; output on the attempts' goroutines. It guarantees that two
// attempts of one resource never overlap (the lock is held over all of a
// task's attempts), that an attempt's inputs are its resource's as the
// tasks before it left them, and that a run killed by the operator is not
// reported as the script's failure.
type attemptRunner struct {
	r     *Runner // its settings, read only: PerNode, Note, Output
	sdb   *sharedDB
	uid   string
	infos map[string]*taskInfo
	led   *ledger   // inputs, gates, and what attempts leave to write
	locks resLocker // resource locks and node and semaphore slots
	logs  liveLogs  // the lines of running attempts, until streamed
	// bases holds, by task, the number of its latest attempt in earlier
	// runs: this run's attempts go on from there (attemptlog.go). Read
	// only.
	bases map[string]int
	runID string // names this run in its attempts' records
	// runner names the fleet's runner in its attempts' records ("" outside
	// a fleet).
	runner string
	// rates are the store's shared rates (rates.go), nil where it has
	// none; stopped is closed when the run is stopped, which ends a wait
	// for one.
	rates   kv.Rates
	stopped <-chan struct{}
}

// limits are the limits task t is under besides its resource, whose lock
// is taken apart: its node's (--per-node) and its semaphores. A copy: the
// locks sort it, and the task is the walker's.
func (a *attemptRunner) limits(t *walk.Task) []walk.Limit {
	var out []walk.Limit
	for _, l := range t.Limits {
		if l.Kind != walk.LimitResource {
			out = append(out, l)
		}
	}
	return out
}

// run executes one task with its retries, delay and timeout.
func (a *attemptRunner) run(ctx context.Context, t *walk.Task) walk.Outcome {
	return a.runTries(ctx, t, a.infos[t.ID].retry, a.bases[t.ID], 0)
}

// runTries runs task t with at most retry retries, numbering its attempts
// after base, under the fleet's claim fence (0 outside a fleet).
func (a *attemptRunner) runTries(ctx context.Context, t *walk.Task, retry, base int, fence int64) walk.Outcome {
	info := a.infos[t.ID]
	if info.problem != "" {
		return walk.Outcome{Err: errors.New(info.problem), Attempts: 1}
	}
	if !info.noop {
		unlock, err := a.locks.lock(ctx, info.node.Resource, a.limits(t))
		if err != nil {
			return walk.Outcome{Err: err, Attempts: 1}
		}
		defer unlock()
	}
	gate := a.led.gateOf(t)
	var last error
	attempts := 0
	for attempt := 0; attempt <= retry; attempt++ {
		if attempt > 0 && info.delay > 0 {
			select {
			case <-ctx.Done():
				return walk.Outcome{Err: ctx.Err(), Attempts: attempts}
			case <-time.After(info.delay):
			}
		}
		if len(info.rates) > 0 {
			if err := a.takeRates(ctx, t.ID, info, 1); err != nil {
				return walk.Outcome{Err: err, Attempts: max(attempts, 1)}
			}
		}
		attempts++
		number := base + attempts
		var inputs map[string]any
		if !info.noop {
			inputs = a.led.inputs(info)
		}
		began := a.r.Now()
		a.logs.begin(t.ID, number)
		res, err := info.handler.Run(ctx, handler.Request{
			Gate:     gate,
			Resource: info.node.Resource, Action: info.node.Action, Task: t.ID,
			BaseDir: info.baseDir, Script: info.script, Inputs: inputs, Sensitive: info.sensitive,
			Location: info.location, Timeout: info.timeout, Attempt: number, Fence: fence,
			Started: func(g handler.Procs) { a.led.recordProcs(t.ID, g) },
			Output:  func(l handler.Line) { a.output(t.ID, l) },
		})
		a.logs.end(t.ID)
		if !info.noop {
			a.keepLog(t.ID, res.Log, AttemptRecord{Number: number, Actor: a.r.Actor, Host: a.r.Host, Run: a.runID, Runner: a.runner, Start: began, End: a.r.Now()})
		}
		if err == nil {
			err = info.checkOutputs(res.Outputs)
		}
		if err == nil && !info.noop {
			a.led.keepRan(t.ID, inputs, res.Outputs)
		}
		if err == nil {
			return walk.Outcome{Changed: res.Changed, Attempts: attempts}
		}
		last = err
		if errors.Is(err, handler.ErrNeedsOperator) {
			break // another attempt would fail the same way
		}
		if ctx.Err() != nil {
			// The operator killed the run (Ctrl-C twice): not the
			// script's failure, and resume runs the task again.
			last = errors.New(killed)
			break
		}
		if attempt < retry && a.r.Note != nil {
			msg := fmt.Sprintf("%s attempt %d failed: %s; retrying", t.ID, number, oneLine(err.Error()))
			if info.delay > 0 {
				msg += " in " + info.delay.String()
			}
			a.r.Note(msg)
		}
	}
	return walk.Outcome{Err: last, Attempts: attempts}
}

// inputsFrom returns the task's inputs, as its action runs with them, out
// of its resource's effective values: each input of its base, nil when
// unset (a script sees "").
func (ti *taskInfo) inputsFrom(eff map[string]any) map[string]any {
	inputs := make(map[string]any, len(ti.inputDefs))
	for name := range ti.inputDefs {
		inputs[name] = eff[name]
	}
	return inputs
}

// oneLine joins a multi-line error (a stderr tail) into one line.
func oneLine(s string) string {
	return strings.ReplaceAll(strings.TrimSpace(s), "\n", " | ")
}

// output passes one line of a running task on: to the log stream, and to
// Runner.Output.
func (a *attemptRunner) output(task string, l handler.Line) {
	a.logs.line(task, l)
	if a.r.Output != nil {
		a.r.Output(task, l)
	}
}

// keepLog buffers the final log of an attempt and its end record, written
// with the task's next state change.
func (a *attemptRunner) keepLog(task string, lines []handler.Line, end AttemptRecord) {
	uid := a.uid
	a.led.later(task, func(tx *store.Tx) error {
		// Even an attempt that printed nothing is on record (its end).
		return finalLog(tx, uid, task, end.Number, lines, end)
	})
}

// logEvery is how often the lines of running attempts reach the store.
const logEvery = 500 * time.Millisecond

// streamLogs writes the lines of running attempts to the store every
// logEvery until done is closed.
func (a *attemptRunner) streamLogs(done <-chan struct{}, stopped chan<- struct{}) {
	defer close(stopped)
	tick := time.NewTicker(logEvery)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-tick.C:
			if a.logs.any() {
				_ = a.sdb.Update(func(tx *store.Tx) error { return a.logs.stream(tx, a.uid) })
			}
		}
	}
}

// checkOutputs refuses outputs that do not fit the inputs they would set:
// the attempt fails, rather than the run.
func (ti *taskInfo) checkOutputs(outs map[string]any) error {
	for k, v := range outs {
		if d, ok := ti.inputDefs[k]; ok {
			if _, err := d.Schema.Check(v); err != nil {
				return fmt.Errorf("output %q does not fit input %s (%s)", k, k, d.Schema)
			}
		}
	}
	return nil
}
