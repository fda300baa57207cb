package events

import "errors"

// Errors returned by this package. The errors actually returned wrap one of
// these and name the rule and the offending word, so callers test them with
// errors.Is and print them as they are.
var (
	// ErrBadRule means a rule is malformed: its text does not parse, or a
	// Rule built in code has fields no text could produce. *ParseError
	// unwraps to it.
	ErrBadRule = errors.New("bad rule")
	// ErrUnknownEvent is returned by ParseEvent for a word that is not one
	// of changed, ok, success, failed, any.
	ErrUnknownEvent = errors.New("unknown event")
	// ErrUnknownResource means a rule names a resource the catalog does not
	// know.
	ErrUnknownResource = errors.New("unknown resource")
	// ErrUnknownAction means a rule names an action the resource's base does
	// not define.
	ErrUnknownAction = errors.New("unknown action")
	// ErrNoRule means the rule to remove is not stored.
	ErrNoRule = errors.New("no such rule")
)
