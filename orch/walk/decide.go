package walk

// Decide applies the truth table (package documentation) to task t, whose
// predecessors have all finished, as a walk does: it returns the state t
// ends in without running (SKIPPED, with the walk's reason) and false, or
// true when t is to run. state gives the final state of a task by id (t's
// predecessors and their Earlier instances), earlier a task's Earlier.
//
// It is the walk's decision for a scheduler that is not a Walker: runners
// that share a plan through a store (orch's fleet) decide each task where
// its last predecessor is recorded.
func Decide(t *Task, earlier func(id string) []string, state func(id string) State) (skip State, run bool) {
	// A failure is let through per predecessor: one joined to t by an
	// edge that fires on ERROR.
	var passes map[string]bool
	for _, e := range t.In {
		if e.On&OnError != 0 {
			if passes == nil {
				passes = map[string]bool{}
			}
			passes[e.From] = true
		}
	}
	triggered := false
	for _, e := range t.In {
		pst := state(e.From)
		if root, failed := pst.FailedRoot(e.From); failed && !passes[e.From] {
			return State{Status: StatusSkipped, Reason: upstreamPrefix + root}, false
		}
		if e.On != 0 && !triggered {
			triggered = e.On.Has(pst.Status) || firesEarlier(earlier(e.From), e.On, state)
		}
	}
	if t.Reactive && !triggered {
		return State{Status: StatusSkipped, Reason: ReasonNotTriggered}, false
	}
	return State{}, true
}

// firesEarlier reports whether an edge with predicate on fires on the
// final status of one of its predecessor's earlier instances.
func firesEarlier(earlier []string, on Trigger, state func(id string) State) bool {
	for _, q := range earlier {
		if on.Has(state(q).Status) {
			return true
		}
	}
	return false
}
