package handler

import "errors"

// Errors returned by this package. Handlers return an *Error, or for a bad
// request or handler name an error wrapping one of these; test them with
// errors.Is.
var (
	// ErrFailed means the attempt ran and failed: the script exited non-zero
	// or was killed by a signal it did not get from us, it could not be
	// started, or its result file is malformed (then ErrBadResult too).
	ErrFailed = errors.New("action failed")
	// ErrBadResult means the script's result file does not follow the
	// protocol. Errors wrapping it also wrap ErrFailed.
	ErrBadResult = errors.New("bad result file")
	// ErrTimeout means the attempt ran longer than Request.Timeout and its
	// process group was killed.
	ErrTimeout = errors.New("action timed out")
	// ErrCanceled means the caller's context was done before the attempt
	// finished; its process group was killed. Errors wrapping it also wrap
	// the context's cause (context.Canceled, context.DeadlineExceeded...).
	ErrCanceled = errors.New("action canceled")
	// ErrBadRequest means the Request cannot be run as it is (a relative
	// base dir, an input that no environment variable can hold...). Nothing
	// was started.
	ErrBadRequest = errors.New("bad action request")
	// ErrUnknownHandler is returned by ByName for a name it does not know.
	ErrUnknownHandler = errors.New("unknown handler")
	// ErrNeedsOperator means another attempt cannot help until the
	// operator acts (a node not trusted yet, a host key that changed):
	// retries are not spent on it.
	ErrNeedsOperator = errors.New("the operator must act first")
)

// Error is a failed attempt, as returned by Shell.Run. Its message is meant
// for the operator as it is, with secrets already masked; the executor
// prints it without adding the handler's words to it.
type Error struct {
	// Kind is ErrFailed, ErrBadResult, ErrTimeout or ErrCanceled.
	Kind error
	// ExitCode is the script's exit status, or -1 when it did not exit on
	// its own (killed, never started, stopped by us).
	ExitCode int
	// Msg is the whole message, e.g. "exit status 2: <stderr tail>" or
	// "timed out after 5s".
	Msg string

	cause error // the context's cause for ErrCanceled, else nil
	host  error // the transport's error, when it failed the attempt
}

func (e *Error) Error() string { return e.Msg }

// Unwrap lets errors.Is see Kind, ErrFailed for a bad result file, the
// context's cause for a canceled attempt, and the transport's error.
func (e *Error) Unwrap() []error {
	errs := []error{e.Kind}
	if e.Kind == ErrBadResult {
		errs = append(errs, ErrFailed)
	}
	if e.cause != nil {
		errs = append(errs, e.cause)
	}
	if e.host != nil {
		errs = append(errs, e.host)
	}
	return errs
}
