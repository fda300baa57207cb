package events

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Hints appended to parse errors, so the message says what to write instead.
const (
	usageHint    = `write "on <emitter>.<action> <event> <subscriber>.<action>" or "after <emitter>.<action> <subscriber>.<action>"`
	onHint       = "write on <emitter>.<action> <event> <subscriber>.<action>"
	afterHint    = "write after <emitter>.<action> <subscriber>.<action>"
	eventHint    = "want changed, ok, success, failed, any"
	refHint      = "write <resource>.<action>"
	resourceHint = "names match [a-z0-9][a-z0-9_.-]*"
	actionHint   = "actions match [a-z_][a-z0-9_]*"
)

// ParseError describes why a rule's text does not parse. It unwraps to
// ErrBadRule.
type ParseError struct {
	Rule string // the text given to Parse
	// Col is the 1-based column of Word, or of the place just past the
	// last word when a word is missing. Words are checked left to right
	// and only ASCII bytes can make up a valid word, so everything before
	// the offending word is ASCII and byte and character columns agree.
	Col  int
	Word string // the offending word; empty when a word is missing
	Msg  string // what is wrong, naming the word
	Hint string // what to write instead; may be empty
}

func (e *ParseError) Error() string {
	msg := fmt.Sprintf("bad rule %q: %s at column %d", e.Rule, e.Msg, e.Col)
	if e.Hint != "" {
		msg += " (" + e.Hint + ")"
	}
	return msg
}

// Unwrap lets callers match every parse failure with errors.Is(err, ErrBadRule).
func (e *ParseError) Unwrap() error { return ErrBadRule }

// maxWords is one more than the longest rule has, so an extra word is seen
// and reported without splitting the rest of an overlong line.
const maxWords = 5

type word struct {
	text string
	col  int // 1-based
}

// splitWords returns up to maxWords words of s, how many it found, and the
// column just past the last one (where a missing word would go). Splitting
// into a fixed array keeps Parse free of allocations: the planner parses
// every stored rule on each run.
func splitWords(s string) (words [maxWords]word, n, end int) {
	end = 1
	i := 0
	for n < maxWords {
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		if i == len(s) {
			break
		}
		start := i
		for i < len(s) && !isSpace(s[i]) {
			i++
		}
		words[n] = word{text: s[start:i], col: start + 1}
		n++
		end = i + 2 // one separator past the word
	}
	return words, n, end
}

// isSpace accepts all ASCII whitespace, not only spaces and tabs, so a rule
// read from a CRLF file or pasted across lines still parses.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

func parseErr(rule string, col int, w, hint, format string, args ...any) *ParseError {
	return &ParseError{Rule: rule, Col: col, Word: w, Msg: fmt.Sprintf(format, args...), Hint: hint}
}

// Parse parses one rule:
//
//	on <emitter>.<action> <event> <subscriber>.<action>
//	after <emitter>.<action> <subscriber>.<action>
//
// Words are separated by any run of whitespace; leading and trailing
// whitespace is ignored. The action of each ref is what follows its last
// dot, since resource names may contain dots. A rule from an action to
// itself is rejected: it could only ever form a cycle. Errors are
// *ParseError values pointing at the first offending word, left to right.
func Parse(s string) (Rule, error) {
	words, n, end := splitWords(s)
	if n == 0 {
		return Rule{}, parseErr(s, 1, "", usageHint, "empty rule")
	}
	var r Rule
	hint := onHint
	switch words[0].text {
	case "on":
		r.Kind = React
	case "after":
		r.Kind, hint = After, afterHint
	default:
		return Rule{}, parseErr(s, words[0].col, words[0].text, usageHint, "expected %q or %q, got %q", "on", "after", words[0].text)
	}
	if n < 2 {
		return Rule{}, parseErr(s, end, "", hint, "missing emitter")
	}
	var err error
	if r.Emitter, err = parseRef(s, words[1]); err != nil {
		return Rule{}, err
	}
	next := 2 // index of the subscriber word
	if r.Kind == React {
		if n < 3 {
			return Rule{}, parseErr(s, end, "", eventHint, "missing event")
		}
		w := words[2]
		ev, ok := lookupEvent(w.text)
		if !ok {
			// "on a.run b.run" is far more likely a forgotten event
			// than an event spelled like a ref.
			if n == 3 && strings.Contains(w.text, ".") {
				return Rule{}, parseErr(s, w.col, w.text, eventHint, "missing event before %q", w.text)
			}
			return Rule{}, parseErr(s, w.col, w.text, eventHint, "unknown event %q", w.text)
		}
		r.Event = ev
		next = 3
	} else if n > 2 {
		if _, ok := lookupEvent(words[2].text); ok {
			return Rule{}, parseErr(s, words[2].col, words[2].text, afterHint, "after rules take no event, got %q", words[2].text)
		}
	}
	if n <= next {
		return Rule{}, parseErr(s, end, "", hint, "missing subscriber")
	}
	w := words[next]
	if r.Subscriber, err = parseRef(s, w); err != nil {
		return Rule{}, err
	}
	if r.Emitter == r.Subscriber {
		return Rule{}, parseErr(s, w.col, w.text, "a rule links two different actions", "emitter and subscriber are the same action %q", w.text)
	}
	if n > next+1 {
		x := words[next+1]
		return Rule{}, parseErr(s, x.col, x.text, hint, "too many words: %q", x.text)
	}
	return r, nil
}

// parseRef splits "<resource>.<action>" at its last dot and checks both parts.
func parseRef(s string, w word) (Ref, error) {
	i := strings.LastIndexByte(w.text, '.')
	switch {
	case i < 0 || i == len(w.text)-1:
		return Ref{}, parseErr(s, w.col, w.text, refHint, "missing action in %q", w.text)
	case i == 0:
		return Ref{}, parseErr(s, w.col, w.text, refHint, "missing resource in %q", w.text)
	}
	ref := Ref{Resource: w.text[:i], Action: w.text[i+1:]}
	if !validResource(ref.Resource) {
		return Ref{}, parseErr(s, w.col, w.text, resourceHint, "bad resource name %q in %q", ref.Resource, w.text)
	}
	if !validAction(ref.Action) {
		return Ref{}, parseErr(s, w.col, w.text, actionHint, "bad action name %q in %q", ref.Action, w.text)
	}
	return ref, nil
}

// validResource reports whether s matches [a-z0-9][a-z0-9_.-]*.
func validResource(s string) bool {
	if s == "" || !isLowerOrDigit(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !isLowerOrDigit(c) && c != '_' && c != '.' && c != '-' {
			return false
		}
	}
	return true
}

// validAction reports whether s matches [a-z_][a-z0-9_]*.
func validAction(s string) bool {
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isLowerOrDigit(c) && c != '_' {
			return false
		}
	}
	return true
}

func isLowerOrDigit(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }

// lookupEvent returns the package constant rather than Event(s), so a parsed
// rule does not keep the parsed line alive through its event.
func lookupEvent(s string) (Event, bool) {
	switch s {
	case "changed":
		return Changed, true
	case "ok":
		return OK, true
	case "success":
		return Success, true
	case "failed":
		return Failed, true
	case "any":
		return Any, true
	}
	return "", false
}

// ParseEvent parses an event name; the error wraps ErrUnknownEvent.
func ParseEvent(s string) (Event, error) {
	if e, ok := lookupEvent(s); ok {
		return e, nil
	}
	return "", fmt.Errorf("%w %q (%s)", ErrUnknownEvent, s, eventHint)
}

// String renders the rule in its canonical form, "on a.run changed b.run"
// or "after a.run b.run", which Parse turns back into the same Rule.
func (r Rule) String() string {
	if r.Kind == After {
		return "after " + r.Emitter.Resource + "." + r.Emitter.Action + " " +
			r.Subscriber.Resource + "." + r.Subscriber.Action
	}
	return r.Kind.String() + " " + r.Emitter.Resource + "." + r.Emitter.Action + " " +
		string(r.Event) + " " + r.Subscriber.Resource + "." + r.Subscriber.Action
}

// String returns the keyword that starts a rule of this kind.
func (k Kind) String() string {
	switch k {
	case React:
		return "on"
	case After:
		return "after"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Validate checks a Rule built in code (not parsed) against what Parse
// accepts, so the store never holds a rule whose text would not parse back
// to it. Errors wrap ErrBadRule.
func (r Rule) Validate() error {
	switch r.Kind {
	case React:
		if _, ok := lookupEvent(string(r.Event)); !ok {
			return invalid(r, "unknown event %q (%s)", r.Event, eventHint)
		}
	case After:
		if r.Event != "" {
			return invalid(r, "after rules take no event, got %q", r.Event)
		}
	default:
		return invalid(r, "unknown rule kind %d", int(r.Kind))
	}
	for _, ref := range [...]Ref{r.Emitter, r.Subscriber} {
		if !validResource(ref.Resource) {
			return invalid(r, "bad resource name %q (%s)", ref.Resource, resourceHint)
		}
		if !validAction(ref.Action) {
			return invalid(r, "bad action name %q (%s)", ref.Action, actionHint)
		}
	}
	if r.Emitter == r.Subscriber {
		return invalid(r, "emitter and subscriber are the same action %q", r.Emitter.String())
	}
	return nil
}

func invalid(r Rule, format string, args ...any) error {
	return fmt.Errorf("%w %q: %s", ErrBadRule, r.String(), fmt.Sprintf(format, args...))
}

// MarshalText renders the canonical form, so rules appear as plain strings
// in JSON and YAML. It refuses a rule that Validate rejects.
func (r Rule) MarshalText() ([]byte, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return []byte(r.String()), nil
}

// UnmarshalText parses a rule written as a string in JSON or YAML (the
// events list of a composition file).
func (r *Rule) UnmarshalText(b []byte) error {
	p, err := Parse(string(b))
	if err != nil {
		return err
	}
	*r = p
	return nil
}

// ParseLines reads rules one per line. '#' starts a comment that runs to
// the end of the line; blank lines are skipped. name labels errors as
// "name:line: bad rule ...". It is all-or-nothing: on the first bad line it
// returns no rules, only that line's error (which still unwraps to
// *ParseError).
func ParseLines(r io.Reader, name string) ([]Rule, error) {
	br := bufio.NewReader(r)
	var rules []Rule
	for n := 1; ; n++ {
		line, readErr := br.ReadString('\n')
		if readErr != nil && !errors.Is(readErr, io.EOF) {
			return nil, fmt.Errorf("read %s: %w", name, readErr)
		}
		if n == 1 {
			line = strings.TrimPrefix(line, "\ufeff") // editors on Windows add a BOM
		}
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		// Trailing whitespace only: leading blanks stay so error columns
		// match what the operator sees in the file.
		line = strings.TrimRight(line, " \t\r\n\v\f")
		if strings.TrimLeft(line, " \t\v\f") != "" {
			rule, err := Parse(line)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %w", name, n, err)
			}
			rules = append(rules, rule)
		}
		if readErr != nil { // io.EOF: the last line had no newline, or was empty
			return rules, nil
		}
	}
}

// Result is what an action did at run time.
type Result int

// The results of a finished action. The zero Result is deliberately none of
// them, so an unset result never matches an event by accident.
const (
	ResultChanged Result = iota + 1 // ran and changed something
	ResultOK                        // ran and changed nothing
	ResultFailed                    // failed after all attempts
)

// String returns the result's lower-case name.
func (r Result) String() string {
	switch r {
	case ResultChanged:
		return "changed"
	case ResultOK:
		return "ok"
	case ResultFailed:
		return "failed"
	}
	return "Result(" + strconv.Itoa(int(r)) + ")"
}

// Matches reports whether a react rule with event e fires for result r:
// changed on ResultChanged, ok on ResultOK, success on either, failed on
// ResultFailed, any on all three. An unknown event or result never matches.
func (e Event) Matches(r Result) bool {
	switch e {
	case Changed:
		return r == ResultChanged
	case OK:
		return r == ResultOK
	case Success:
		return r == ResultChanged || r == ResultOK
	case Failed:
		return r == ResultFailed
	case Any:
		return r == ResultChanged || r == ResultOK || r == ResultFailed
	}
	return false
}
