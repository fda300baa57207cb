// Package orch runs plans: it walks a plan's tasks in dependency order, in
// parallel within limits, and records every task's status as it goes.
//
// The scheduling is package orch/walk's: it knows nothing of the store,
// handlers, resources or events. orch gives it tasks with their incoming
// edges, each carrying a walk.Trigger made from its rule's event
// (walktask.go), and callbacks, Run to execute a task and Persist to record
// a state change; the walker decides which task may start, which must be
// skipped and why. The run-time semantics of react and after rules (the
// truth table of the SPEC, section 4) are the walker's, tested there; the
// mapping of events to triggers is orch's, tested here.
package orch
