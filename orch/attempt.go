package orch

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/solarops/solar/orch/handler"
	"github.com/solarops/solar/store"
)

// limits are the limits task t is under besides its resource: its node's
// (--per-node) and its semaphores.
func (ex *execution) limits(t *Task) []sharedLimit {
	var out []sharedLimit
	if t.Node != "" {
		out = append(out, sharedLimit{name: "node/" + t.Node, n: max(ex.r.PerNode, 1)})
	}
	for _, s := range t.Sema {
		name, count, ok := strings.Cut(s, ":")
		n, err := strconv.Atoi(count)
		if !ok || err != nil || n < 1 || strings.HasPrefix(name, "resource/") {
			continue
		}
		out = append(out, sharedLimit{name: "sema/" + name, n: n})
	}
	return out
}

// run executes one task with its retries, delay and timeout.
func (ex *execution) run(ctx context.Context, t *Task) Outcome {
	info := ex.infos[t.ID]
	if info.problem != "" {
		return Outcome{Err: errors.New(info.problem), Attempts: 1}
	}
	if !info.noop {
		unlock, err := ex.locks.lock(ctx, info.node.Resource, ex.limits(t))
		if err != nil {
			return Outcome{Err: err, Attempts: 1}
		}
		defer unlock()
	}
	gate := ex.led.gateOf(t)
	var last error
	attempts := 0
	for attempt := 0; attempt <= info.retry; attempt++ {
		if attempt > 0 && info.delay > 0 {
			select {
			case <-ctx.Done():
				return Outcome{Err: ctx.Err(), Attempts: attempts}
			case <-time.After(info.delay):
			}
		}
		attempts++
		var inputs map[string]any
		if !info.noop {
			inputs = ex.led.inputs(info)
		}
		ex.logs.begin(t.ID, attempts)
		res, err := info.handler.Run(ctx, handler.Request{
			Gate:     gate,
			Resource: info.node.Resource, Action: info.node.Action, Task: t.ID,
			BaseDir: info.baseDir, Script: info.script, Inputs: inputs, Sensitive: info.sensitive,
			Location: info.location, Timeout: info.timeout,
			Started: func(g handler.Group) { ex.led.recordGroup(t.ID, g) },
			Output:  func(l handler.Line) { ex.output(t.ID, l) },
		})
		ex.logs.end(t.ID)
		if !info.noop {
			ex.keepLog(t.ID, attempts, res.Log)
		}
		if err == nil {
			err = info.checkOutputs(res.Outputs)
		}
		if err == nil && !info.noop {
			ex.led.keepRan(t.ID, inputs, res.Outputs)
		}
		if err == nil {
			return Outcome{Changed: res.Changed, Attempts: attempts}
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
		if attempt < info.retry && ex.r.Note != nil {
			msg := fmt.Sprintf("%s attempt %d failed: %s; retrying", t.ID, attempts, oneLine(err.Error()))
			if info.delay > 0 {
				msg += " in " + info.delay.String()
			}
			ex.r.Note(msg)
		}
	}
	return Outcome{Err: last, Attempts: attempts}
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
func (ex *execution) output(task string, l handler.Line) {
	ex.logs.line(task, l)
	if ex.r.Output != nil {
		ex.r.Output(task, l)
	}
}

// keepLog buffers the final log of an attempt, written with the task's
// next state change.
func (ex *execution) keepLog(task string, attempt int, lines []handler.Line) {
	uid := ex.rec.UID
	ex.led.later(func(tx *store.Tx) error {
		// Even an attempt that printed nothing is on record (its end).
		return finalLog(tx, uid, task, attempt, lines)
	})
}

// logEvery is how often the lines of running attempts reach the store.
const logEvery = 500 * time.Millisecond

// streamLogs writes the lines of running attempts to the store every
// logEvery until done is closed.
func (ex *execution) streamLogs(done <-chan struct{}, stopped chan<- struct{}) {
	defer close(stopped)
	tick := time.NewTicker(logEvery)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-tick.C:
			if ex.logs.any() {
				_ = ex.sdb.Update(func(tx *store.Tx) error { return ex.logs.stream(tx, ex.rec.UID) })
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
