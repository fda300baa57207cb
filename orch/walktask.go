package orch

import (
	"github.com/solarops/solar/events"
	"github.com/solarops/solar/orch/walk"
	"github.com/solarops/solar/planner"
)

// This file turns what a plan says about a task into the walker's typed
// values, so that package walk never learns of events.

// triggerOf is the walker's predicate for a plan edge: the final statuses
// of its predecessor on which the rule that made it fires. An after edge,
// and a react edge whose event matches no result, only order (zero).
// events.Event.Matches stays the one definition of what an event means.
func triggerOf(e *planner.Edge) walk.Trigger {
	if e.Kind != planner.EdgeReact {
		return 0
	}
	var on walk.Trigger
	if e.Event.Matches(events.ResultChanged) {
		on |= walk.OnSuccess
	}
	if e.Event.Matches(events.ResultOK) {
		on |= walk.OnNoop
	}
	if e.Event.Matches(events.ResultFailed) {
		on |= walk.OnError
	}
	return on
}
