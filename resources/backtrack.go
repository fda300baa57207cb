package resources

import (
	"reflect"
	"strings"

	"github.com/solarops/solar/resources/schema"
)

// Where an input's value comes from (Origin.Source).
const (
	SourceConnected = "connected" // connections feed it (Origin.From: one per mapping)
	SourceComputed  = "computed"  // its base computes it (Origin.From: the inputs it reads)
	SourceOwn       = "own"       // its own value, set at create or update
	SourceDefault   = "default"   // its own value is the base's default
	SourceUnset     = "unset"     // no value at all
)

// Origin is where one input's effective value comes from, as a tree: a
// connected input's children are the emitter inputs its mappings read, a
// computed input's the inputs its expression names, each backtracked in
// turn down to the inputs no connection feeds.
type Origin struct {
	Resource string
	Input    string
	// Key is the key of the receiver's hash this origin fills, and Element
	// the tag of the receiver's list element it makes (the emitter's name);
	// both "" when it feeds the whole input. They are set on the children
	// of a connected input only.
	Key       string
	Element   string
	Source    string // one of the Source constants
	Expr      string // the expression of a computed input
	Value     any    // the effective value; the caller masks it when Sensitive
	Sensitive bool   // the value must be masked (SensitiveInputs)
	// Repeated says this input was already backtracked higher up the same
	// tree: its children are not repeated, so a diamond of connections does
	// not grow the tree exponentially.
	Repeated bool
	From     []Origin
}

// Backtrack returns where each named input of resource name gets its
// value, in the base's order; all of them when inputs is empty. An unknown
// resource or input is ErrNotFound or ErrInvalid, naming it.
func (c *Catalog) Backtrack(name string, inputs ...string) ([]Origin, error) {
	r, err := c.Get(name)
	if err != nil {
		return nil, err
	}
	if len(inputs) == 0 {
		inputs = r.Base.InputNames()
	}
	for _, in := range inputs {
		if _, ok := r.Base.Input(in); !ok {
			return nil, invalidf("%s: unknown input %q (base %s has: %s)", name, in, r.Base.Name, strings.Join(r.Base.InputNames(), ", "))
		}
	}
	out := make([]Origin, 0, len(inputs))
	for _, in := range inputs {
		o, err := c.backtrack(name, in, map[string]bool{}, 0)
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}

// backtrack builds input's origin; seen holds the "resource.input" already
// in the tree.
func (c *Catalog) backtrack(name, input string, seen map[string]bool, depth int) (Origin, error) {
	o := Origin{Resource: name, Input: input}
	if depth > maxDepth {
		return o, invalidf("connections around %s are too deep or circular", name)
	}
	r, err := c.Get(name)
	if err != nil {
		return o, err
	}
	eff, err := c.Effective(name)
	if err != nil {
		return o, err
	}
	sens, err := c.SensitiveInputs(name)
	if err != nil {
		return o, err
	}
	o.Value, o.Sensitive = eff[input], sens[input]
	d, ok := r.Base.Input(input)
	if !ok {
		// An emitter input its base no longer has (a mapping kept across an
		// upgrade): it gives nothing, as apply decides.
		o.Source = SourceUnset
		return o, nil
	}
	id := name + "." + input
	if seen[id] {
		o.Repeated = true
	}
	seen[id] = true
	conns, err := c.Incoming(name)
	if err != nil {
		return o, err
	}
	o.From = []Origin{}
	for _, conn := range conns {
		for _, m := range conn.Mappings {
			if m.To != input {
				continue
			}
			o.Source = SourceConnected
			if o.Repeated {
				continue
			}
			e, err := c.Get(conn.Emitter)
			if err != nil {
				return o, err
			}
			sub, err := c.backtrack(conn.Emitter, m.From, seen, depth+1)
			if err != nil {
				return o, err
			}
			sub.Key, sub.Element = m.Key, element(d, e, m)
			o.From = append(o.From, sub)
		}
	}
	if o.Source != "" {
		return o, nil
	}
	if d.Computable != "" {
		o.Source, o.Expr = SourceComputed, d.Computable
		if !o.Repeated {
			for _, in := range ExprInputs(d.Computable, r.Base.InputNames()) {
				if in == input {
					continue
				}
				sub, err := c.backtrack(name, in, seen, depth+1)
				if err != nil {
					return o, err
				}
				o.From = append(o.From, sub)
			}
		}
		return o, nil
	}
	switch own := r.Inputs[input]; {
	case own == nil:
		o.Source = SourceUnset
	case d.Default != nil && reflect.DeepEqual(own, d.Default):
		o.Source = SourceDefault
	default:
		o.Source = SourceOwn
	}
	return o, nil
}

// element names the element of the receiver's list input a mapping makes:
// the emitter's name when a value that is not a list feeds a list, which
// apply turns into one element per emitter; the element's tag when the
// mapping fills a field (Key) of an element of a list of objects
// (in:key|tag); "" otherwise.
func element(d *InputDef, e *Resource, m Mapping) string {
	if d.Schema.Kind != schema.List {
		return ""
	}
	if m.Key != "" {
		return m.ElementTag(e.Name)
	}
	if from, ok := e.Base.Input(m.From); ok && from.Schema.Kind != schema.List {
		return e.Name
	}
	return ""
}

// ExprInputs lists, in order of first appearance and without repeats, the
// names among inputs that expr refers to: identifiers outside string
// literals and not after a '.' (a field of a value, not an input). It reads
// the expression's text only, so that backtracking needs no evaluator; a
// name the expression mentions but never reads at run time is listed too.
func ExprInputs(expr string, inputs []string) []string {
	known := make(map[string]bool, len(inputs))
	for _, in := range inputs {
		known[in] = true
	}
	out := []string{}
	listed := map[string]bool{}
	for i := 0; i < len(expr); {
		ch := expr[i]
		switch {
		case ch == '"' || ch == '\'' || ch == '`':
			i = skipString(expr, i)
		case isIdentStart(ch):
			j := i
			for j < len(expr) && (isIdentStart(expr[j]) || expr[j] >= '0' && expr[j] <= '9') {
				j++
			}
			word := expr[i:j]
			if known[word] && !listed[word] && !afterDot(expr, i) {
				listed[word] = true
				out = append(out, word)
			}
			i = j
		case ch >= '0' && ch <= '9':
			// A number, such as 1e3 or 0x1f: its letters name no input.
			for i < len(expr) && (isIdentStart(expr[i]) || expr[i] >= '0' && expr[i] <= '9' || expr[i] == '.') {
				i++
			}
		default:
			i++
		}
	}
	return out
}

// skipString returns the index just after the string literal that starts
// at i (a backslash escapes the next byte, except in `raw` strings), or
// len(s) when it is not closed.
func skipString(s string, i int) int {
	q := s[i]
	for j := i + 1; j < len(s); j++ {
		switch {
		case s[j] == '\\' && q != '`':
			j++
		case s[j] == q:
			return j + 1
		}
	}
	return len(s)
}

func isIdentStart(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// afterDot reports whether the identifier at i follows a '.', spaces
// between allowed: then it is a field or a method, not an input.
func afterDot(s string, i int) bool {
	for i--; i >= 0 && (s[i] == ' ' || s[i] == '\t'); i-- {
	}
	return i >= 0 && s[i] == '.'
}
