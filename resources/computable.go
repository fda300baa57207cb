package resources

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/vm"

	"github.com/solarops/solar/resources/schema"
)

// A computable input (meta.yaml computable: EXPR) gets its value from an
// expression of the expr language (github.com/expr-lang/expr) over the
// resource's effective inputs, connected ones included. The expression is
// compiled once per base and process, and evaluated where the effective
// values are computed (effective), so that whatever stages, pins or shows
// effective values sees the computed ones, and a change upstream stages
// the receiver with the computed value's diff. Values reach the expression
// as data (its environment), never as text spliced into it.
//
// An expression sees every input of its base except the computable ones
// declared at or after it: computables are evaluated in declaration order,
// so one may build on an earlier one and none can read itself.

// Limits of an expression. expr has no loops; what can still grow is a
// builtin over a big array: one the expression makes (1..1e9, repeat) is
// counted by the VM's memory budget, but iterating an input's list is not,
// and predicates nested three deep over a list of 10,000 run 10^12 times.
// So every predicate body (map, filter, all, reduce, ...) is patched at
// compile time to count its runs first (stepCounter), and an evaluation
// stops at MaxComputeSteps. MaxComputeNodes bounds the expression's size,
// and so its work outside predicates.
const (
	// MaxComputeNodes is the most syntax-tree nodes an expression may have.
	MaxComputeNodes = 2000
	// ComputeMemoryBudget is the most array elements and bytes one
	// evaluation may allocate (vm.VM.MemoryBudget).
	ComputeMemoryBudget = 100_000
	// MaxComputeSteps is the most predicate runs one evaluation may make.
	MaxComputeSteps = 100_000
)

// stepFunc names, in an expression's environment, the function each
// predicate body calls first. "$" keeps it apart from every input name.
const stepFunc = "$step"

// errSteps stops an evaluation that made MaxComputeSteps predicate runs.
var errSteps = fmt.Errorf("cost limit exceeded: more than %d predicate runs (map, filter, all, ...)", MaxComputeSteps)

// stepPatch makes every predicate body "$step(); BODY": the sequence keeps
// the body's type, so the compiler checks the expression as written.
type stepPatch struct{}

func (stepPatch) Visit(n *ast.Node) {
	p, ok := (*n).(*ast.PredicateNode)
	if !ok {
		return
	}
	call := &ast.CallNode{Callee: &ast.IdentifierNode{Value: stepFunc}}
	p.Node = &ast.SequenceNode{Nodes: []ast.Node{call, p.Node}}
}

// stepCounter returns a fresh $step for one evaluation.
func stepCounter() func() bool {
	n := 0
	return func() bool {
		if n++; n > MaxComputeSteps {
			panic(errSteps)
		}
		return true
	}
}

// program is a compiled computable input.
type program struct {
	prog  *vm.Program
	reads []string // the inputs the expression names, sorted, once each
}

// programs caches compiled expressions by base digest and input name, or,
// for a base not in the store (no digest), by the expression and the
// inputs it may see; a base does not change once stored.
var programs sync.Map // string -> *program

// computes reports whether the base has a computable input.
func (b *Base) computes() bool {
	for i := range b.Inputs {
		if b.Inputs[i].Computable != "" {
			return true
		}
	}
	return false
}

// compileComputables compiles every computable input of b, so that a base
// whose expression does not compile is refused when it is read. Errors
// name the input and the line and column in the expression.
func (b *Base) compileComputables() error {
	for i := range b.Inputs {
		if b.Inputs[i].Computable == "" {
			continue
		}
		if _, err := b.program(i); err != nil {
			return err
		}
	}
	return nil
}

// compiled returns b once its computable inputs compile, which they must
// for the base (read from shown) to be valid.
func (b *Base) compiled(shown string) (*Base, error) {
	if err := b.compileComputables(); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBase, shown, err)
	}
	return b, nil
}

// program returns the compiled expression of input i.
func (b *Base) program(i int) (*program, error) {
	d := &b.Inputs[i]
	key := b.Digest + "\x00" + d.Name
	if b.Digest == "" {
		key = "\x00" + d.Computable + "\x00" + envSignature(b, i)
	}
	if p, ok := programs.Load(key); ok {
		return p.(*program), nil
	}
	prog, err := expr.Compile(d.Computable, expr.Env(compileEnv(b, i)), expr.MaxNodes(MaxComputeNodes), expr.Patch(stepPatch{}),
		// A value that changes each time it is computed would stage a
		// change on every command.
		expr.DisableBuiltin("now"))
	if err != nil {
		return nil, fmt.Errorf("input %q: computable: %s", d.Name, exprMessage(err))
	}
	p := &program{prog: prog, reads: reads(prog, b)}
	programs.Store(key, p)
	return p, nil
}

// visible reports whether the expression of input i may read input j.
func visible(b *Base, i, j int) bool {
	return b.Inputs[j].Computable == "" || j < i
}

// compileEnv gives each input input i may read a value of its schema's
// type, so that the compiler checks what it can (str + int is refused)
// while lists and objects stay open.
func compileEnv(b *Base, i int) map[string]any {
	env := make(map[string]any, len(b.Inputs)+1)
	env[stepFunc] = (func() bool)(nil)
	for j := range b.Inputs {
		if visible(b, i, j) {
			env[b.Inputs[j].Name] = zeroOf(b.Inputs[j].Schema)
		}
	}
	return env
}

func zeroOf(s *schema.Schema) any {
	switch s.Kind {
	case schema.Str:
		return ""
	case schema.Int:
		return int64(0)
	case schema.Float:
		return float64(0)
	case schema.Bool:
		return false
	case schema.List:
		return []any{}
	}
	return map[string]any{}
}

// envSignature names what compileEnv gives input i's expression.
func envSignature(b *Base, i int) string {
	var sb strings.Builder
	for j := range b.Inputs {
		if visible(b, i, j) {
			sb.WriteString(b.Inputs[j].Name + ":" + b.Inputs[j].Schema.String() + ";")
		}
	}
	return sb.String()
}

// reads lists the inputs of b that the compiled expression names.
func reads(prog *vm.Program, b *Base) []string {
	v := &identifiers{seen: map[string]bool{}}
	node := prog.Node()
	ast.Walk(&node, v)
	var out []string
	for _, d := range b.Inputs {
		if v.seen[d.Name] {
			out = append(out, d.Name)
		}
	}
	return out
}

type identifiers struct{ seen map[string]bool }

func (v *identifiers) Visit(n *ast.Node) {
	if id, ok := (*n).(*ast.IdentifierNode); ok {
		v.seen[id.Value] = true
	}
}

// exprMessage renders an expr error on one line with a 1-based line and
// column ("line 1, column 6: unexpected token ..."); expr's own rendering
// spans lines with a snippet of the source.
func exprMessage(err error) string {
	var fe *file.Error
	if errors.As(err, &fe) {
		msg := strings.ReplaceAll(fe.Message, "\n", " ")
		if fe.Line > 0 {
			return fmt.Sprintf("line %d, column %d: %s", fe.Line, fe.Column+1, msg)
		}
		return msg
	}
	return strings.ReplaceAll(err.Error(), "\n", " ")
}

// compute sets every computable input of resource r in vals, its
// effective values otherwise complete, in declaration order, each checked
// against its input's schema. hidden reports whether an input's value must
// stay out of messages; it is only asked when something fails. Errors
// wrap ErrInvalid and name the resource and the input.
func (r *Resource) compute(vals map[string]any, hidden func(input string) bool, unknownNil bool) error {
	b := &r.Base
	for i := range b.Inputs {
		d := &b.Inputs[i]
		if d.Computable == "" {
			continue
		}
		p, err := b.program(i)
		if err != nil {
			return fmt.Errorf("%w: base %s: %v", ErrBase, b.Name, err)
		}
		env := make(map[string]any, len(p.reads)+1)
		env[stepFunc] = stepCounter()
		for _, name := range p.reads {
			env[name] = vals[name]
		}
		machine := vm.VM{MemoryBudget: ComputeMemoryBudget}
		out, err := machine.Run(p.prog, env)
		if err != nil && unknownNil && readsNil(p, env) {
			vals[d.Name] = nil
			continue
		}
		if err != nil {
			msg := exprMessage(err)
			if readsHidden(p, hidden) {
				msg = "evaluation failed (message hidden: the expression reads a sensitive input)"
			}
			return invalidf("%s: input %q: computable: %s", r.Name, d.Name, msg)
		}
		cv, err := d.Schema.Check(out)
		if err != nil {
			if d.Sensitive || readsHidden(p, hidden) {
				err = maskErr(&InputDef{Sensitive: true}, err)
			}
			return invalidf("%s: input %q (%s): computed value: %v", r.Name, d.Name, d.Schema, err)
		}
		vals[d.Name] = cv
	}
	return nil
}

func readsNil(p *program, env map[string]any) bool {
	for _, name := range p.reads {
		if env[name] == nil {
			return true
		}
	}
	return false
}

func readsHidden(p *program, hidden func(string) bool) bool {
	for _, name := range p.reads {
		if hidden(name) {
			return true
		}
	}
	return false
}

// Compute sets the computable inputs of r in vals, the values a task of r
// sees otherwise complete, as the effective values do. A plan pins values
// other than the store's current ones with it. A value a plan does not
// know yet (an emitter never committed, or committed later) is nil; an
// expression that fails on one then gives nil too, as a connected input
// would be, rather than refuse the plan. Messages are masked whenever the
// expression reads a sensitive input of the base, or any input a
// connection feeds: the plan does not know where those come from.
func Compute(r *Resource, vals map[string]any, fed func(input string) bool) error {
	if !r.Base.computes() {
		return nil
	}
	hidden := func(in string) bool {
		d, ok := r.Base.Input(in)
		return !ok || d.Sensitive || slices.Contains(r.Masked, in) || fed(in)
	}
	return r.compute(vals, hidden, true)
}

// Computed reports whether the named input of r is computed by an
// expression rather than set by hand or by a connection.
func (r *Resource) Computed(input string) bool {
	d, ok := r.Base.Input(input)
	return ok && d.Computable != ""
}

// computedSensitive marks in sens each computable input of r whose
// expression reads a sensitive input: its value may carry the secret.
func (r *Resource) computedSensitive(sens map[string]bool) {
	b := &r.Base
	for i := range b.Inputs {
		if b.Inputs[i].Computable == "" {
			continue
		}
		p, err := b.program(i)
		if err != nil {
			sens[b.Inputs[i].Name] = true // cannot tell what it reads
			continue
		}
		for _, name := range p.reads {
			if sens[name] {
				sens[b.Inputs[i].Name] = true
				break
			}
		}
	}
}

// hiddenFor tells compute which inputs of r are sensitive, folding r's
// sensitivity only when asked: compute asks only when an evaluation fails.
func (c *Catalog) hiddenFor(r *Resource, conns []Connection, depth int) func(string) bool {
	var sens map[string]bool
	return func(input string) bool {
		if sens == nil {
			var err error
			if sens, err = c.foldSensitive(r, conns, "", depth); err != nil {
				return true
			}
		}
		return sens[input]
	}
}
