package orch

import "github.com/solarops/solar/orch/walk"

// A task's recorded state and status are part of what a plan is: orch
// stores them (States), its commands show them, and the walker (orch/walk)
// computes them. orch names them as its own; the walker's mechanics
// (Walker, Task, InEdge, Outcome, Limit) are named from package walk.
type (
	State  = walk.State
	Status = walk.Status
)

// Statuses, re-exported; see walk.Status.
const (
	StatusPending    = walk.StatusPending
	StatusInProgress = walk.StatusInProgress
	StatusSuccess    = walk.StatusSuccess
	StatusNoop       = walk.StatusNoop
	StatusSkipped    = walk.StatusSkipped
	StatusError      = walk.StatusError
)

// Reasons of a SKIPPED task, re-exported; see walk.ReasonStopped.
const (
	ReasonNotTriggered   = walk.ReasonNotTriggered
	ReasonStopped        = walk.ReasonStopped
	ReasonUpstreamFailed = walk.ReasonUpstreamFailed
)
