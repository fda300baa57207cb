package app

import (
	"errors"
	"fmt"

	"github.com/solarops/solar/internal/invalid"
)

// Exit statuses, the one list of them (README "Exit statuses"). Only Main
// turns them into os.Exit.
const (
	ExitOK      = 0
	ExitError   = 1
	ExitInvalid = 2
	ExitFailed  = 3
	ExitNothing = 4
	// ExitStopped is a run stopped by "solar orch stop" (from any machine)
	// or SIGTERM, with tasks left to run.
	ExitStopped = 5
	// ExitDrifted is a drift run that found a resource drifted (and no
	// error: 1 wins).
	ExitDrifted = 6
	// ExitInterrupted is the shell's convention for a process stopped by
	// SIGINT (128 + 2).
	ExitInterrupted = 130
)

// ExitHelp ends every command's help text.
const ExitHelp = `
Exit status: 0 ok, 1 error (store busy, I/O), 2 invalid input (nothing was changed),
3 a run in which some task ended in ERROR, 4 nothing to plan (no plan written),
5 a run stopped by solar orch stop (from any machine) with tasks left to run,
6 solar drift found a resource drifted, 130 interrupted by Ctrl-C.`

// UsageError is bad usage of a command: wrong arguments or flags.
type UsageError struct {
	// Cmd is the path of the misused command ("solar resource create"),
	// which Main names in place of "solar"; empty for solar itself.
	Cmd string
	Err error
}

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Is makes a UsageError invalid input (exit 2), whatever it wraps.
func (e *UsageError) Is(target error) bool { return target == invalid.ErrInput }

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

// StoppedError reports a run stopped by "solar orch stop" or SIGTERM
// before every task ran (exit 5, which wins over 3: killed tasks end
// ERROR); the hint to resume has already been printed.
type StoppedError struct{}

func (e *StoppedError) Error() string { return "stopped" }

// DriftedError reports a drift run that found drift (exit 6); the
// results have already been printed.
type DriftedError struct{ Msg string }

func (e *DriftedError) Error() string { return e.Msg }

// ExitCode maps an error returned by a command to its exit status.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	switch {
	case errors.As(err, new(*FailedError)):
		return ExitFailed
	case errors.As(err, new(*NothingError)):
		return ExitNothing
	case errors.As(err, new(*InterruptedError)):
		return ExitInterrupted
	case errors.As(err, new(*StoppedError)):
		return ExitStopped
	case errors.As(err, new(*DriftedError)):
		return ExitDrifted
	case errors.Is(err, invalid.ErrInput):
		// A domain sentinel made with invalid.New, a typed error that
		// unwraps to one, or a UsageError.
		return ExitInvalid
	}
	return ExitError
}
