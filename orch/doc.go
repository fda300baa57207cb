// Package orch runs plans: it walks a plan's tasks in dependency order, in
// parallel within limits, and records every task's status as it goes.
//
// The heart of the package is Walker (walk.go). It knows nothing of the
// store, handlers or resources: it is given tasks with their incoming edges
// and two callbacks, Run to execute a task and Persist to record a state
// change, and it decides which task may start, which must be skipped and why.
// The run-time semantics of react and after rules (the truth table of the
// SPEC, section 4) live entirely in Walker, so they are tested in one place.
package orch
