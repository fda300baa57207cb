package walk

import (
	"context"
	"fmt"
	"testing"
)

// TestWalkTriggerIsTheEdgePredicate drives a task with every Trigger,
// including sets no react rule makes, after every way a predecessor can
// end: the walker follows the predicate it is given, and nothing else.
//   - A reactive task runs exactly when the trigger holds its predecessor's
//     final status (a SKIPPED predecessor fires nothing).
//   - A failed predecessor (ERROR, or SKIPPED upstream failed) skips the task
//     "upstream failed" unless the trigger holds ERROR.
//   - A staged task otherwise runs, whatever the trigger.
func TestWalkTriggerIsTheEdgePredicate(t *testing.T) {
	preds := []struct {
		name     string
		tasks    []Task
		outcomes map[string]Outcome
		status   Status
		failed   bool // counts as failed for its successors
	}{
		{"SUCCESS", []Task{walkTask("P")}, nil, StatusSuccess, false},
		{"NOOP", []Task{walkTask("P")}, map[string]Outcome{"P": noop}, StatusNoop, false},
		{"ERROR", []Task{walkTask("P")}, map[string]Outcome{"P": failure}, StatusError, true},
		{"SKIPPED-not-triggered", []Task{reactTask("P")}, nil, StatusSkipped, false},
		{"SKIPPED-upstream-failed", []Task{walkTask("R"), walkTask("P", afterEdge("R"))}, map[string]Outcome{"R": failure}, StatusSkipped, true},
	}
	for on := Trigger(0); on <= OnSuccess|OnNoop|OnError; on++ {
		for _, p := range preds {
			for _, reactive := range []bool{true, false} {
				t.Run(fmt.Sprintf("on=%s/P=%s/reactive=%v", on, p.name, reactive), func(t *testing.T) {
					tasks := append(append([]Task(nil), p.tasks...), Task{ID: "S", Reactive: reactive, In: []InEdge{{From: "P", On: on}}})
					h := newWalkHarness(tasks, p.outcomes)
					states := h.mustWalk(t, tasks, nil)
					if got := states["P"].Status; got != p.status {
						t.Fatalf("setup: P ended %s, want %s", got, p.status)
					}
					var wantRun bool
					switch {
					case p.failed && on&OnError == 0:
						wantRun = false
					case reactive:
						wantRun = on.Has(p.status)
					default:
						wantRun = true
					}
					got := states["S"]
					if ran := got.Status == StatusSuccess && h.ran("S") == 1; ran != wantRun {
						t.Fatalf("S = %s %q after %d runs; want run = %v", got.Status, got.Reason, h.ran("S"), wantRun)
					}
					if !wantRun && p.failed && on&OnError == 0 {
						if root, failed := got.FailedRoot("S"); !failed || root == "S" {
							t.Errorf("S = %s %q, want SKIPPED upstream failed naming the root", got.Status, got.Reason)
						}
					}
				})
			}
		}
	}
}

func TestTriggerHas(t *testing.T) {
	for on := Trigger(0); on <= OnSuccess|OnNoop|OnError; on++ {
		want := map[Status]bool{StatusSuccess: on&OnSuccess != 0, StatusNoop: on&OnNoop != 0, StatusError: on&OnError != 0}
		for _, s := range []Status{StatusPending, StatusInProgress, StatusSuccess, StatusNoop, StatusSkipped, StatusError} {
			if on.Has(s) != want[s] {
				t.Errorf("Trigger %s: Has(%s) = %v, want %v", on, s, on.Has(s), want[s])
			}
		}
	}
	if got := (OnSuccess | OnError).String(); got != "SUCCESS|ERROR" {
		t.Errorf("String = %q, want SUCCESS|ERROR", got)
	}
}

// TestWalkLimitKindsKeepNamesApart checks that a limit is its kind and its
// name: node "db" and semaphore "db", each of count 1, do not exclude each
// other, while two holders of semaphore "db" do.
func TestWalkLimitKindsKeepNamesApart(t *testing.T) {
	for i := 0; i < 20; i++ {
		tasks := []Task{
			{ID: "node", Limits: []Limit{nodeLimit("db", 1)}, Weight: 2},
			{ID: "sema-1", Limits: []Limit{semaLimit("db", 1)}, Weight: 2},
			{ID: "sema-2", Limits: []Limit{semaLimit("db", 1)}, Weight: 1},
		}
		h := newWalkHarness(tasks, nil)
		var sema gauge
		m := newMeeting(2)
		h.wrapRun(func(ctx context.Context, task *Task) Outcome {
			switch task.ID {
			case "node", "sema-1":
				if !m.arrive() {
					t.Errorf("%s: node db and sema db did not run together", task.ID)
				}
			}
			if task.ID != "node" {
				sema.enter()
				defer sema.leave()
			}
			return Outcome{}
		})
		h.mustWalk(t, tasks, nil)
		if p := sema.peak.Load(); p > 1 {
			t.Fatalf("semaphore db held by %d tasks at once, limit 1", p)
		}
	}
}
