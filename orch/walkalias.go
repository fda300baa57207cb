package orch

import "github.com/solarops/solar/orch/walk"

// The walker's names as orch and its commands knew them before the walker
// had a package of its own (orch/walk): aliases, so that code naming them
// compiles unchanged. New code names package walk; these go once callers
// have moved.
type (
	Walker  = walk.Walker
	Task    = walk.Task
	InEdge  = walk.InEdge
	State   = walk.State
	Status  = walk.Status
	Outcome = walk.Outcome
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
