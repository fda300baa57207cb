package schema

import (
	"fmt"

	"github.com/solarops/solar/internal/invalid"
)

// Errors every failure of this package unwraps to, so callers can map them to
// exit codes without inspecting messages.
var (
	// ErrBadSchema is wrapped by every *ParseError: a base declares an input
	// with schema text that is not well formed.
	ErrBadSchema = invalid.New("bad schema")
	// ErrBadValue is wrapped by every *CheckError: a value does not match the
	// schema of its input.
	ErrBadValue = invalid.New("value does not match its schema")
)

// ParseError reports malformed schema text and where the problem is.
type ParseError struct {
	Text   string // the whole schema text as given
	Column int    // 1-based, counted in runes
	Msg    string // what was expected or found there
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("bad schema %q: %s at column %d", e.Text, e.Msg, e.Column)
}

// Unwrap returns ErrBadSchema.
func (e *ParseError) Unwrap() error { return ErrBadSchema }

// CheckError reports the first place where a value does not match its schema.
// The message is deliberately short: callers prefix it with the resource and
// input it belongs to.
type CheckError struct {
	// Path locates the failing part inside the checked value: "" for the value
	// itself, "settings.host" for an object field, "backends[2]" for a list
	// element.
	Path string
	// Want is the schema text of the failing node, such as "int" or "[str]!".
	Want string
	// Got is the offending value as given (not canonicalised): nil when a
	// required value is missing, the key name for an unknown key.
	Got any
	// Msg describes the mismatch, such as `want int, got "abc" (string)`.
	Msg string
}

func (e *CheckError) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

// Unwrap returns ErrBadValue.
func (e *CheckError) Unwrap() error { return ErrBadValue }

// under moves the error below a parent's path segment on its way up, so paths
// are only built for values that actually fail. seg is either a field name or
// an index in brackets.
func (e *CheckError) under(seg string) *CheckError {
	switch {
	case e.Path == "":
		e.Path = seg
	case e.Path[0] == '[':
		e.Path = seg + e.Path
	default:
		e.Path = seg + "." + e.Path
	}
	return e
}
