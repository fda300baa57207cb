package invalid

import "errors"

// ErrInput is wrapped by every error caused by the user's input (see the
// package comment). Test for it with errors.Is; never return it alone.
var ErrInput = errors.New("invalid input")

// New returns a sentinel error whose message is msg and that wraps
// ErrInput. Each call returns a distinct error, compared by identity as
// errors.New's are, so errors.Is tells the sentinels apart too.
func New(msg string) error { return &sentinel{msg: msg} }

type sentinel struct{ msg string }

func (e *sentinel) Error() string { return e.msg }

// Unwrap makes errors.Is(err, ErrInput) hold for every error wrapping e.
func (e *sentinel) Unwrap() error { return ErrInput }
