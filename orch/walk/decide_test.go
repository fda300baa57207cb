package walk

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestDecideAgreesWithWalker is the property the fleet rests on: Decide,
// given the final states of a task's predecessors (and their Earlier
// instances), says what a Walker did with the task. Random small graphs
// mix every Trigger (several edges between one pair included), reactive
// tasks, earlier instances, states recorded by an earlier walk and every
// outcome of a run; each task the walk decided must have ended as Decide
// says, and a task Decide runs must have run once with its scripted
// outcome.
func TestDecideAgreesWithWalker(t *testing.T) {
	for i := range 3000 {
		rng := rand.New(rand.NewPCG(uint64(i), 31))
		tasks, initial, outcomes := randomDecideCase(rng)
		h := newWalkHarness(tasks, outcomes)
		states := h.mustWalk(t, tasks, initial)
		byID := make(map[string]*Task, len(tasks))
		for k := range tasks {
			byID[tasks[k].ID] = &tasks[k]
		}
		earlier := func(id string) []string { return byID[id].Earlier }
		state := func(id string) State { return states[id] }
		for k := range tasks {
			task := &tasks[k]
			if initial[task.ID].Status.Finished() {
				continue // restored, not decided
			}
			got := states[task.ID]
			skip, run := Decide(task, earlier, state)
			if run {
				want := outcomeStatus(outcomes[task.ID])
				if got.Status != want || h.ran(task.ID) != 1 {
					t.Fatalf("case %d: %s: Decide runs it, walker left it %s %q after %d runs (want %s)\n%s",
						i, task.ID, got.Status, got.Reason, h.ran(task.ID), want, describeCase(tasks, initial, states))
				}
				continue
			}
			if got.Status != skip.Status || got.Reason != skip.Reason || h.ran(task.ID) != 0 {
				t.Fatalf("case %d: %s: Decide says %s %q, walker left it %s %q after %d runs\n%s",
					i, task.ID, skip.Status, skip.Reason, got.Status, got.Reason, h.ran(task.ID), describeCase(tasks, initial, states))
			}
		}
	}
}

// randomDecideCase builds up to eight tasks, each joined to earlier ones
// by random edges; a task's Earlier instances are among its ancestors, so
// they have finished when its successors are decided, as in orch's plans.
func randomDecideCase(rng *rand.Rand) ([]Task, map[string]State, map[string]Outcome) {
	n := 1 + rng.IntN(8)
	tasks := make([]Task, n)
	anc := make([]map[int]bool, n)
	outcomes := map[string]Outcome{}
	initial := map[string]State{}
	for k := range tasks {
		id := fmt.Sprintf("t%d", k)
		task := Task{ID: id, Reactive: rng.IntN(3) == 0}
		anc[k] = map[int]bool{}
		for p := range k {
			if rng.IntN(3) != 0 {
				continue
			}
			for range 1 + rng.IntN(2) { // sometimes two edges from one predecessor
				task.In = append(task.In, InEdge{From: fmt.Sprintf("t%d", p), On: Trigger(rng.IntN(8))})
			}
			anc[k][p] = true
			for a := range anc[p] {
				anc[k][a] = true
			}
		}
		for a := range anc[k] {
			if rng.IntN(4) == 0 {
				task.Earlier = append(task.Earlier, fmt.Sprintf("t%d", a))
			}
		}
		tasks[k] = task
		outcomes[id] = []Outcome{{Changed: true}, {}, {Err: errors.New("boom")}}[rng.IntN(3)]
		if rng.IntN(6) == 0 && recordedBefore(anc[k], initial) {
			initial[id] = randomRecorded(rng)
		}
	}
	return tasks, initial, outcomes
}

// recordedBefore reports whether every ancestor of a task has a final
// state recorded: final states are recorded in a topological order, so a
// resumed walk never finds a task finished before what it depends on.
func recordedBefore(anc map[int]bool, initial map[string]State) bool {
	for a := range anc {
		if !initial[fmt.Sprintf("t%d", a)].Status.Finished() {
			return false
		}
	}
	return true
}

// randomRecorded is a state a resumed walk may find recorded.
func randomRecorded(rng *rand.Rand) State {
	return []State{
		{Status: StatusSuccess, Changed: true},
		{Status: StatusNoop},
		{Status: StatusError, Err: "earlier"},
		{Status: StatusSkipped, Reason: ReasonNotTriggered},
		{Status: StatusSkipped, Reason: upstreamPrefix + "elsewhere"},
		{Status: StatusSkipped, Reason: ReasonStopped},
		{Status: StatusInProgress},
		{Status: StatusPending},
	}[rng.IntN(8)]
}

func outcomeStatus(o Outcome) Status {
	switch {
	case o.Err != nil:
		return StatusError
	case o.Changed:
		return StatusSuccess
	}
	return StatusNoop
}

func describeCase(tasks []Task, initial, states map[string]State) string {
	s := ""
	for _, task := range tasks {
		s += fmt.Sprintf("  %s reactive=%v in=%v earlier=%v initial=%q final=%s %q\n",
			task.ID, task.Reactive, task.In, task.Earlier, initial[task.ID].Status, states[task.ID].Status, states[task.ID].Reason)
	}
	return s
}
