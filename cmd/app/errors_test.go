package app_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/solarops/solar/cmd/app"
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

// TestExitCodeInvalidInput: every sentinel that meant invalid input when
// ExitCode listed them one by one (before issue 28) still exits 2, alone,
// wrapped with context as commands return them, and inside the typed
// errors that unwrap to one.
func TestExitCodeInvalidInput(t *testing.T) {
	for name, err := range map[string]error{
		"resources.ErrBase": resources.ErrBase, "resources.ErrInvalid": resources.ErrInvalid,
		"resources.ErrNotFound": resources.ErrNotFound, "resources.ErrExists": resources.ErrExists,
		"resources.ErrConnected": resources.ErrConnected, "resources.ErrCycle": resources.ErrCycle,
		"events.ErrUnknownResource": events.ErrUnknownResource, "events.ErrUnknownAction": events.ErrUnknownAction,
		"events.ErrNoRule": events.ErrNoRule, "events.ErrBadRule": events.ErrBadRule,
		"tags.ErrInvalidTag": tags.ErrInvalidTag, "tags.ErrBadExpr": tags.ErrBadExpr,
		"schema.ErrBadSchema": schema.ErrBadSchema, "schema.ErrBadValue": schema.ErrBadValue,
		"planner.ErrDependencyCycle": planner.ErrDependencyCycle, "planner.ErrEmpty": planner.ErrEmpty,
		"orch.ErrNoPlans": orch.ErrNoPlans, "orch.ErrUnknownPlan": orch.ErrUnknownPlan, "orch.ErrPending": orch.ErrPending,
		"orch.ErrUnknownTask": orch.ErrUnknownTask, "orch.ErrStale": orch.ErrStale, "orch.ErrNoLog": orch.ErrNoLog,
		"nodes.ErrNotNode": nodes.ErrNotNode, "nodes.ErrLocal": nodes.ErrLocal, "nodes.ErrFingerprint": nodes.ErrFingerprint,
		"store.ErrBadLocation": store.ErrBadLocation,
		"staging.ErrNoEntry":   staging.ErrNoEntry, "staging.ErrNoHistory": staging.ErrNoHistory,
		"staging.ErrNotRevertible": staging.ErrNotRevertible, "staging.ErrUnknownAction": staging.ErrUnknownAction,
		"events.ParseError":  &events.ParseError{},
		"tags.ExprError":     &tags.ExprError{},
		"schema.CheckError":  &schema.CheckError{},
		"schema.ParseError":  &schema.ParseError{},
		"app.UsageError":     app.Usagef("give --start or --end tasks"),
		"wrapped UsageError": fmt.Errorf("command: %w", &app.UsageError{Err: errors.New("unknown flag")}),
	} {
		t.Run(name, func(t *testing.T) {
			if got := app.ExitCode(err); got != app.ExitInvalid {
				t.Errorf("ExitCode(%v) = %d, want %d", err, got, app.ExitInvalid)
			}
			wrapped := fmt.Errorf("create web: %w: %q (see solar resource list)", err, "web")
			if got := app.ExitCode(wrapped); got != app.ExitInvalid {
				t.Errorf("ExitCode(%v) = %d, want %d", wrapped, got, app.ExitInvalid)
			}
		})
	}
}

// TestExitCodeOthers: errors that are not the user's input keep their own
// exit statuses; an unrelated error is 1, even when it wraps a sentinel
// that is not invalid input.
func TestExitCodeOthers(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want int
	}{
		{"nil", nil, app.ExitOK},
		{"unrelated", errors.New("write /tmp/x: no space left on device"), app.ExitError},
		{"store busy", fmt.Errorf("%w: plan 1 is being run by pid 7", orch.ErrRunning), app.ExitError},
		{"damaged store", store.Damagedf("record %s is cut short", "x"), app.ExitError},
		{"cancelled", fmt.Errorf("ssh: %w", context.Canceled), app.ExitError},
		{"failed run", &app.FailedError{Msg: "1 task in ERROR"}, app.ExitFailed},
		{"nothing to plan", &app.NothingError{Msg: "nothing staged"}, app.ExitNothing},
		{"interrupted", fmt.Errorf("run: %w", &app.InterruptedError{}), app.ExitInterrupted},
		{"stopped", fmt.Errorf("run: %w", &app.StoppedError{}), app.ExitStopped},
		{"stopped is 5", &app.StoppedError{}, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := app.ExitCode(tc.err); got != tc.want {
				t.Errorf("ExitCode(%v) = %d, want %d", tc.err, got, tc.want)
			}
		})
	}
}
