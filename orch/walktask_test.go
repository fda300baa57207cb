package orch

import (
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
