package planner

import (
	"strings"

	"github.com/solarops/solar/internal/invalid"
)

// Errors returned by Build. Test them with errors.Is; the values returned
// may wrap them with the plan-specific detail.
var (
	// ErrEmpty means the input selects no staged entry, so there is nothing
	// to plan.
	ErrEmpty = invalid.New("no staged entries selected: nothing to plan")
	// ErrDependencyCycle means after rules alone order actions in a circle.
	// It is returned wrapped in a *CycleError, which names the cycle.
	ErrDependencyCycle = invalid.New("dependency cycle")
)

// CycleError is a cycle made only of after (dependency) rules. Unlike a
// cycle through react rules it cannot be broken by running an action twice,
// because after rules add no work.
type CycleError struct {
	// Cycle lists node ids along the cycle; the first one is repeated at the
	// end.
	Cycle []string
	// Rules holds the canonical text of the after rule behind each step of
	// Cycle, in the same order: Rules[i] orders Cycle[i] before Cycle[i+1].
	Rules []string
}

func (e *CycleError) Error() string {
	return "dependency cycle: " + strings.Join(e.Cycle, " -> ") +
		" (after rules add no work, so this cycle cannot be resolved; remove one of the rules)"
}

// Unwrap makes errors.Is(err, ErrDependencyCycle) hold.
func (e *CycleError) Unwrap() error { return ErrDependencyCycle }
