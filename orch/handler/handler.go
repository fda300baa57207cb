package handler

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Request is one attempt of one action to run.
type Request struct {
	Resource string // resource name, "keystone"
	Action   string // action name, "run"
	Task     string // plan instance, "haproxy.run#1"
	BaseDir  string // absolute; the script's working directory
	Script   string // relative to BaseDir, from meta.yaml's actions
	// Inputs are the effective inputs in canonical form: string, int64,
	// float64, bool, []any, map[string]any or nil.
	Inputs map[string]any
	// Sensitive names the inputs whose values must never be printed. An
	// output with one of these names is secret too.
	Sensitive map[string]bool
	Location  string        // node name; "" is this machine
	Timeout   time.Duration // per attempt; 0 is none
	// Started, if set, is told the attempt's process group when it runs on
	// this machine (see Attempt.Started).
	Started func(Procs)
	// Gate, if set, is called just before the script starts, once the
	// attempt is otherwise ready (files written, pipes made): the script
	// starts only if it returns nil. A runner gives one that waits until
	// the commits the task depends on are durable, so that getting the
	// attempt ready overlaps their sync.
	Gate func() error
	// Check runs the script in check mode (SOLAR_CHECK=1): it must change
	// nothing and report whether it would.
	Check bool
	// Output, if set, is told of every line the script prints, as it
	// prints it, masked with the sensitive inputs (outputs are not known
	// yet). It is called from the attempt's goroutines, one at a time,
	// and must return quickly.
	Output func(Line)
	// Attempt numbers the attempt over its plan's life (from 1), and
	// Fence is the claim it runs under when a runner of a fleet runs it
	// (0 otherwise): the script sees them as SOLAR_ATTEMPT and SOLAR_FENCE,
	// so that it can fence its own side effects (a newer claim's fence is
	// greater).
	Attempt int
	Fence   int64
	// Members, when set, makes the attempt a batch (batch.go): Script is
	// the base's batch script, run once for every member; Inputs and
	// Sensitive are unused (each member has its own), and Result.Members
	// holds what the result file says of each.
	Members []Member
}

// Result is what an attempt reported.
//
// Changed and Outputs are meaningful only when the attempt succeeded.
// Stdout and Stderr are the last 64 KiB of what the script printed, with
// secrets masked; they are filled in on failure too, for the logs.
type Result struct {
	Changed bool
	// Changes names what differs, when the script said (its result's
	// "changes": inputs, or aspects such as "mode"); nil when it did not.
	Changes []string
	// Outputs may be nil. Values are canonical (see the package comment)
	// and unmasked: they are data for the executor, not text for a screen.
	Outputs map[string]any
	Stdout  string
	Stderr  string
	// Log is what the attempt printed, stdout and stderr interleaved, as
	// timestamped lines with every secret masked, capped (see logHead);
	// filled in on failure too.
	Log []Line
	// Members are a batch's results by member resource, as its result file
	// gave them, errors masked (Request.Members); nil when it gave none
	// that can be used, and for an attempt that is not a batch.
	Members map[string]MemberResult
}

// Handler runs one attempt of an action. A non-nil error means the attempt
// failed; retries and the delay between them are the caller's. Run may be
// called from many goroutines at once.
type Handler interface {
	Run(ctx context.Context, req Request) (Result, error)
}

// Noop is the handler of bases that stand for something solar does not act
// on (a node, a placeholder): it does nothing and reports nothing changed.
// It costs a function call, so a plan of noop tasks measures the executor
// alone.
type Noop struct{}

// Run reports Changed=false at once.
func (Noop) Run(context.Context, Request) (Result, error) { return Result{}, nil }

// The handlers a base's meta.yaml may name (handler:), listed once here:
// package resources refuses a base naming another (Known), and ByName
// returns the one named.
const (
	ShellName   = "shell"
	AnsibleName = "ansible"
	NoopName    = "noop"
)

// names are the handlers, in the order messages list them.
var names = [...]string{ShellName, AnsibleName, NoopName}

// Known reports whether name is a handler a base may name. "" is not: a
// base that names none is read as naming ShellName.
func Known(name string) bool {
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

// KnownList lists the handlers as a message says them: "shell, ansible or
// noop".
func KnownList() string {
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// ByName returns the handler a base's meta.yaml names: "shell" (also "",
// the default) gets shell, "ansible" gets ansible (each with default
// settings when nil); "noop" gets Noop.
func ByName(name string, shell *Shell, ansible *Ansible) (Handler, error) {
	switch name {
	case ShellName, "":
		if shell == nil {
			shell = &Shell{}
		}
		return shell, nil
	case AnsibleName:
		if ansible == nil {
			ansible = &Ansible{}
		}
		return ansible, nil
	case NoopName:
		return Noop{}, nil
	}
	return nil, fmt.Errorf("%w %q: want %s", ErrUnknownHandler, name, KnownList())
}
