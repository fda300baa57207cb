package app

import (
	"errors"
	"fmt"

	"github.com/solarops/solar/events"
	"github.com/solarops/solar/nodes"
	"github.com/solarops/solar/orch"
	"github.com/solarops/solar/planner"
	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/resources/schema"
	"github.com/solarops/solar/staging"
	"github.com/solarops/solar/store"
	"github.com/solarops/solar/tags"
)

// Exit statuses (SPEC section 8). Only Main turns them into os.Exit.
const (
	ExitOK      = 0
	ExitError   = 1
	ExitInvalid = 2
	ExitFailed  = 3
	ExitNothing = 4
	// ExitInterrupted is the shell's convention for a process stopped by
	// SIGINT (128 + 2).
	ExitInterrupted = 130
)

// ExitHelp ends every command's help text.
const ExitHelp = `
Exit status: 0 ok, 1 error (store busy, I/O), 2 invalid input (nothing was changed),
3 a run in which some task ended in ERROR, 4 nothing to plan (no plan written),
130 interrupted by Ctrl-C.`

// UsageError is bad usage of a command: wrong arguments or flags.
type UsageError struct {
	// Cmd is the path of the misused command ("solar resource create"),
	// which Main names in place of "solar"; empty for solar itself.
	Cmd string
	Err error
}

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Usagef returns a UsageError.
func Usagef(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

// FailedError reports a finished run with failed tasks (exit 3); the report
// has already been printed.
type FailedError struct{ Msg string }

func (e *FailedError) Error() string { return e.Msg }

// NothingError reports that a command found nothing to do and wrote
// nothing (exit 4), so that "solar ch process && solar orch run-once last"
// never runs an older plan; the message has already been printed.
type NothingError struct{ Msg string }

func (e *NothingError) Error() string { return e.Msg }

// InterruptedError reports a run stopped by Ctrl-C (exit 130); the hint to
// resume has already been printed.
type InterruptedError struct{}

func (e *InterruptedError) Error() string { return "interrupted" }

// invalid lists the sentinels that mean "the user gave bad input"; every
// error wrapping one maps to exit 2. Domain packages add theirs here, in
// this one place.
var invalid = []error{
	resources.ErrBase, resources.ErrInvalid, resources.ErrNotFound, resources.ErrExists,
	resources.ErrConnected, resources.ErrCycle,
	events.ErrUnknownResource, events.ErrUnknownAction, events.ErrNoRule,
	tags.ErrInvalidTag, tags.ErrBadExpr, schema.ErrBadSchema, schema.ErrBadValue, events.ErrBadRule,
	planner.ErrDependencyCycle, planner.ErrEmpty, orch.ErrNoPlans, orch.ErrUnknownPlan, orch.ErrPending, orch.ErrUnknownTask, orch.ErrStale, orch.ErrNoLog,
	nodes.ErrNotNode, nodes.ErrLocal, nodes.ErrFingerprint,
	store.ErrBadLocation,
	staging.ErrNoEntry, staging.ErrNoHistory, staging.ErrNotRevertible, staging.ErrUnknownAction,
}

// RegisterInvalid adds sentinels of later packages to the exit-2 list.
func RegisterInvalid(errs ...error) { invalid = append(invalid, errs...) }

// ExitCode maps an error returned by a command to its exit status.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var (
		fe  *FailedError
		ue  *UsageError
		pe  *events.ParseError
		te  *tags.ExprError
		ce  *schema.CheckError
		spe *schema.ParseError
	)
	switch {
	case errors.As(err, &fe):
		return ExitFailed
	case errors.As(err, new(*NothingError)):
		return ExitNothing
	case errors.As(err, new(*InterruptedError)):
		return ExitInterrupted
	case errors.As(err, &ue), errors.As(err, &pe), errors.As(err, &te), errors.As(err, &ce), errors.As(err, &spe):
		return ExitInvalid
	}
	for _, s := range invalid {
		if errors.Is(err, s) {
			return ExitInvalid
		}
	}
	return ExitError
}
