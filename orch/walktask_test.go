package orch

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/solarops/solar/events"
	"github.com/solarops/solar/orch/walk"
	"github.com/solarops/solar/planner"
)

// TestTriggerOfMatchesEvents checks that the walker's predicate for a react
// edge fires on exactly the statuses whose result the rule's event matches,
// and that an after edge only orders.
func TestTriggerOfMatchesEvents(t *testing.T) {
	results := map[walk.Status]events.Result{
		walk.StatusSuccess: events.ResultChanged,
		walk.StatusNoop:    events.ResultOK,
		walk.StatusError:   events.ResultFailed,
	}
	statuses := []walk.Status{walk.StatusSuccess, walk.StatusNoop, walk.StatusError, walk.StatusSkipped, walk.StatusPending}
	for _, ev := range []events.Event{events.Changed, events.OK, events.Success, events.Failed, events.Any, "bogus"} {
		on := triggerOf(&planner.Edge{Kind: planner.EdgeReact, Event: ev})
		for _, s := range statuses {
			r, ok := results[s]
			if want := ok && ev.Matches(r); on.Has(s) != want {
				t.Errorf("event %q: trigger %s fires on %s = %v, want %v", ev, on, s, on.Has(s), want)
			}
		}
	}
	if on := triggerOf(&planner.Edge{Kind: planner.EdgeAfter}); on != 0 {
		t.Errorf("after edge: trigger %s, want none (ordering only)", on)
	}
}

// TestTaskLimits checks the one place a task's limits are made: its
// resource's lock, its node's slots (at least one) and its semaphores, and
// the errors of a bad sema entry, worded as the walker worded them.
func TestTaskLimits(t *testing.T) {
	res := func(name string) walk.Limit { return walk.Limit{Kind: walk.LimitResource, Name: name, Count: 1} }
	node := func(name string, n int) walk.Limit { return walk.Limit{Kind: walk.LimitNode, Name: name, Count: n} }
	sema := func(name string, n int) walk.Limit { return walk.Limit{Kind: walk.LimitSema, Name: name, Count: n} }
	tests := []struct {
		name    string
		info    taskInfo
		perNode int
		want    []walk.Limit
		err     string // the whole message, "" for none
	}{
		{"local, no sema", taskInfo{}, 3, []walk.Limit{res("r")}, ""},
		{"node and semas", taskInfo{location: "n1", semaList: []string{"db:2", "disk:1"}}, 3, []walk.Limit{res("r"), node("n1", 3), sema("db", 2), sema("disk", 1)}, ""},
		{"per-node unset means one", taskInfo{location: "n1"}, 0, []walk.Limit{res("r"), node("n1", 1)}, ""},
		{"last colon splits", taskInfo{semaList: []string{"a:b:2"}}, 1, []walk.Limit{res("r"), sema("a:b", 2)}, ""},
		{"a task that cannot run holds no semaphore", taskInfo{problem: "gone", semaList: []string{"db"}}, 1, []walk.Limit{res("r")}, ""},
		{"without count", taskInfo{semaList: []string{"db"}}, 1, nil, `bad semaphore: task "A" has semaphore "db": want name:count with a count of at least 1`},
		{"count zero", taskInfo{semaList: []string{"ok:1", "db:0"}}, 1, nil, `bad semaphore: task "A" has semaphore "db:0": want name:count with a count of at least 1`},
		{"count not a number", taskInfo{semaList: []string{"db:x"}}, 1, nil, `bad semaphore: task "A" has semaphore "db:x": want name:count with a count of at least 1`},
		{"without name", taskInfo{semaList: []string{":1"}}, 1, nil, `bad semaphore: task "A" has semaphore ":1": want name:count with a count of at least 1`},
		{"named twice", taskInfo{semaList: []string{"x:1", "x:3", "db:1", "db:2"}}, 1, nil, `bad semaphore: task "A" names semaphore "db" twice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := taskLimits(nil, "A", "r", &tt.info, tt.perNode)
			if tt.err != "" {
				if !errors.Is(err, ErrBadSema) || err.Error() != tt.err {
					t.Fatalf("error %v, want %q wrapping ErrBadSema", err, tt.err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Fatalf("taskLimits = %v, %v; want %v", got, err, tt.want)
			}
			if len(got) > maxLimits(&tt.info) {
				t.Errorf("%d limits, more than maxLimits's %d", len(got), maxLimits(&tt.info))
			}
		})
	}
}

// TestWalkTasksBadSemaOrder checks that of several tasks with a bad sema
// entry, the one named is the first in the walker's order (heaviest, then
// by id), whichever the plan lists first.
func TestWalkTasksBadSemaOrder(t *testing.T) {
	rec := &Record{Plan: &planner.Plan{Nodes: []planner.Node{
		{ID: "a.run#0", Resource: "a", Action: "run", Weight: 1},
		{ID: "c.run#0", Resource: "c", Action: "run", Weight: 2},
		{ID: "b.run#0", Resource: "b", Action: "run", Weight: 2},
		{ID: "d.run#0", Resource: "d", Action: "run", Weight: 5},
	}}}
	infos := map[string]*taskInfo{
		"a.run#0": {semaList: []string{"db"}},
		"c.run#0": {semaList: []string{"db"}},
		"b.run#0": {semaList: []string{"db"}},
		"d.run#0": {semaList: []string{"db:1"}},
	}
	_, err := walkTasks(rec, infos, 1)
	if !errors.Is(err, ErrBadSema) || !strings.Contains(err.Error(), `task "b.run#0"`) {
		t.Fatalf("walkTasks error %v, want the bad sema of b.run#0", err)
	}
	infos["a.run#0"].semaList, infos["b.run#0"].semaList, infos["c.run#0"].semaList = nil, nil, nil
	tasks, err := walkTasks(rec, infos, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := tasks[3].Limits; len(got) != 2 || cap(got) != 2 || got[1] != (walk.Limit{Kind: walk.LimitSema, Name: "db", Count: 1}) {
		t.Errorf("d's limits %v (room for %d), want its resource's and db:1, cut to size", got, cap(got))
	}
}
