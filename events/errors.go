package events

import (
	"errors"

	badinput "github.com/solarops/solar/internal/invalid" // events has a func invalid
)

// Errors returned by this package. The errors actually returned wrap one of
// these and name the rule and the offending word, so callers test them with
// errors.Is and print them as they are.
var (
	// ErrBadRule means a rule is malformed: its text does not parse, or a
	// Rule built in code has fields no text could produce. *ParseError
	// unwraps to it.
	ErrBadRule = badinput.New("bad rule")
	// ErrUnknownEvent is returned by ParseEvent for a word that is not one
	// of changed, ok, success, failed, any.
	ErrUnknownEvent = errors.New("unknown event")
	// ErrUnknownResource means a rule names a resource the catalog does not
	// know.
	ErrUnknownResource = badinput.New("unknown resource")
	// ErrUnknownAction means a rule names an action the resource's base does
	// not define.
	ErrUnknownAction = badinput.New("unknown action")
	// ErrNoRule means the rule to remove is not stored.
	ErrNoRule = badinput.New("no such rule")
)
