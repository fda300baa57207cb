package orch

import (
	"fmt"
	"sort"

	"github.com/solarops/solar/planner"
	"github.com/solarops/solar/resources"
	"github.com/solarops/solar/resources/schema"
	"github.com/solarops/solar/staging"
	"github.com/solarops/solar/store"
)

// pinner computes the pins of a plan's tasks (Pin) when the plan is made.
//
// The rule: a task sees the committed state of every resource plus what
// earlier tasks of the same plan apply. Its own resource's staged entry
// (run, update or remove) applies to every task of that resource in the
// plan; another resource's entry applies when the task of that entry is
// an ancestor of the task in the graph. A resource whose entry applies is
// seen with its current values and connections; any other, with its
// committed snapshot (what its actions last ran with). An emitter whose
// entry applies gives what its entry's task was pinned to, so a chain is
// computed once per task, not once per task and link.
type pinner struct {
	tx   *store.Tx
	cat  *resources.Catalog
	plan *planner.Plan

	byID  map[string]*planner.Node
	entry map[string]string   // resource -> the task of its value entry (run, update, remove)
	tasks map[string][]string // resource -> its tasks, in plan order
	in    map[string][]string // task -> the tasks with an edge into it
	order map[string]int      // task -> its position in a topological order

	committed map[string]*staging.Snapshot // read once per resource; nil if never committed
	pins      map[string]*Pin
}

// pinPlan computes the pin of every task of p.
func pinPlan(tx *store.Tx, p *planner.Plan) (map[string]*Pin, error) {
	pn := &pinner{tx: tx, cat: resources.NewCatalog(tx), plan: p,
		byID: make(map[string]*planner.Node, len(p.Nodes)), entry: map[string]string{},
		tasks: map[string][]string{}, in: make(map[string][]string, len(p.Nodes)),
		committed: map[string]*staging.Snapshot{}, pins: make(map[string]*Pin, len(p.Nodes))}
	for i := range p.Nodes {
		n := &p.Nodes[i]
		pn.byID[n.ID] = n
		pn.tasks[n.Resource] = append(pn.tasks[n.Resource], n.ID)
		if n.Staged && !custom(n.Action) {
			pn.entry[n.Resource] = n.ID
		}
	}
	for _, e := range p.Edges {
		pn.in[e.To] = append(pn.in[e.To], e.From)
	}
	topo := pn.topological()
	pn.order = make(map[string]int, len(topo))
	for i, id := range topo {
		pn.order[id] = i
	}
	for i, id := range topo {
		if i%prepareChunk == 0 {
			pn.cat = resources.NewCatalog(tx) // a catalog keeps what it decoded
		}
		pin, err := pn.pin(pn.byID[id])
		if err != nil {
			return nil, err
		}
		if pin != nil {
			pn.pins[id] = pin
		}
	}
	return pn.pins, nil
}

// custom reports whether action changes no values (an action staged by
// hand, such as restart).
func custom(action string) bool {
	return action != staging.ActionRun && action != staging.ActionUpdate && action != staging.ActionRemove
}

// topological orders the tasks so that every edge's From comes before its
// To (Kahn's algorithm; the planner resolved every cycle).
func (pn *pinner) topological() []string {
	deg := make(map[string]int, len(pn.plan.Nodes))
	out := map[string][]string{}
	for _, e := range pn.plan.Edges {
		deg[e.To]++
		out[e.From] = append(out[e.From], e.To)
	}
	var queue, order []string
	for _, n := range pn.plan.Nodes {
		if deg[n.ID] == 0 {
			queue = append(queue, n.ID)
		}
	}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		order = append(order, id)
		for _, to := range out[id] {
			if deg[to]--; deg[to] == 0 {
				queue = append(queue, to)
			}
		}
	}
	return order
}

// before reports whether task a is an ancestor of task b: a path of edges
// leads from a to b. Tasks after a in the topological order only are
// searched, and a direct edge, the common case, is found first.
func (pn *pinner) before(a, b string) bool {
	if a == b || pn.order[a] > pn.order[b] {
		return false
	}
	for _, from := range pn.in[b] {
		if from == a {
			return true
		}
	}
	limit := pn.order[a]
	seen := map[string]bool{b: true}
	stack := []string{b}
	for len(stack) > 0 {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, from := range pn.in[id] {
			if from == a {
				return true
			}
			if !seen[from] && pn.order[from] > limit {
				seen[from] = true
				stack = append(stack, from)
			}
		}
	}
	return false
}

// snapshot returns resource name's committed snapshot, read once.
func (pn *pinner) snapshot(name string) (*staging.Snapshot, error) {
	if s, ok := pn.committed[name]; ok {
		return s, nil
	}
	s, err := staging.Committed(pn.tx, name)
	if err != nil {
		return nil, err
	}
	pn.committed[name] = s
	return s, nil
}

// pin computes the pin of task n; nil when its resource is gone (the
// runner reports that task's problem).
func (pn *pinner) pin(n *planner.Node) (*Pin, error) {
	r, err := pn.cat.Get(n.Resource)
	if err != nil {
		return nil, nil
	}
	vals, srcs, err := pn.values(n, r)
	if err != nil {
		return nil, err
	}
	p := &Pin{Base: BaseRef{Name: r.Base.Name, Version: r.Base.Version, Digest: r.Base.Digest},
		Inputs: make(map[string]any, len(r.Base.Inputs))}
	for _, d := range r.Base.Inputs {
		p.Inputs[d.Name] = vals[d.Name]
	}
	if len(srcs.whole) > 0 {
		p.Sources = srcs.whole
	}
	p.Parts = srcs.parts
	p.Later = pn.later(n, p)
	sens, err := pn.cat.SensitiveInputs(n.Resource)
	if err != nil {
		return nil, err
	}
	for k := range sens {
		p.Sensitive = append(p.Sensitive, k)
	}
	sort.Strings(p.Sensitive)
	if p.Node, err = pn.node(n, r, p); err != nil {
		return nil, err
	}
	if n.Staged && n.StagedKey != "" {
		if e, err := staging.Get(pn.tx, n.StagedKey); err == nil {
			p.Diff, p.Corrective = e.Diff, e.Cause == DriftCause
		}
	}
	return p, nil
}

// values computes the effective values task n of resource r sees, and for
// each input fed whole by a connection, the emitter input it comes from.
func (pn *pinner) values(n *planner.Node, r *resources.Resource) (map[string]any, feeds, error) {
	snap, err := pn.snapshot(n.Resource)
	if err != nil {
		return nil, feeds{}, err
	}
	applied := pn.entry[n.Resource] != ""
	own, conns := r.Inputs, []resources.Connection(nil)
	if applied || snap == nil {
		if conns, err = pn.cat.Incoming(n.Resource); err != nil {
			return nil, feeds{}, err
		}
	} else {
		own, conns = snap.Own, snap.Connections
		if !pn.anyApplied(n, conns) {
			// Nothing before it in the plan changes what it last ran
			// with: its committed inputs are its values.
			return snap.Inputs, pn.sources(r, conns), nil
		}
	}
	out := make(map[string]any, len(own)+1)
	for k, v := range own {
		out[k] = v
	}
	var listStarted resources.Pieces
	for _, c := range conns {
		e, err := pn.cat.Get(c.Emitter)
		if err != nil {
			if snap != nil {
				return snap.Inputs, pn.sources(r, conns), nil // its emitter is gone: what it last ran with
			}
			continue
		}
		for _, m := range c.Mappings {
			val, err := pn.emitted(c.Emitter, m.From, n.ID)
			if err != nil {
				return nil, feeds{}, err
			}
			resources.Apply(out, r, e, m, val, &listStarted)
		}
	}
	if err := resources.Compute(r, out, func(in string) bool { return fedInput(conns, in) }); err != nil {
		return nil, feeds{}, err
	}
	return out, pn.sources(r, conns), nil
}

// anyApplied reports whether an emitter of conns has its entry's task
// before task n.
func (pn *pinner) anyApplied(n *planner.Node, conns []resources.Connection) bool {
	for _, c := range conns {
		if t := pn.entry[c.Emitter]; t != "" && pn.before(t, n.ID) {
			return true
		}
	}
	return false
}

// emitted is the value of emitter's input that task id sees: what the
// emitter's entry's task was pinned to if that task comes before id, else
// the emitter's committed value (nil if it was never committed).
func (pn *pinner) emitted(emitter, input, id string) (any, error) {
	if t := pn.entry[emitter]; t != "" && pn.before(t, id) {
		if p := pn.pins[t]; p != nil {
			return p.Inputs[input], nil
		}
	}
	snap, err := pn.snapshot(emitter)
	if err != nil {
		return nil, err
	}
	if snap == nil && input == resources.LocationInput {
		// A node's location is its name: a node never committed and
		// outside the plan still places its receivers there, as node
		// does for its transport values.
		eff, err := pn.cat.Effective(emitter)
		if err != nil {
			return nil, err
		}
		return eff[input], nil
	}
	if snap == nil {
		return nil, nil
	}
	return snap.Inputs[input], nil
}

// sources maps each input of r that a connection of conns feeds whole to
// the emitter input it comes from, followed up the chain of such
// connections: an output the run sends there reaches the task. A mapping
// into one key of an object, or of one value into a list (one element per
// emitter), feeds part of the input: it is among the parts (partsOf).
func (pn *pinner) sources(r *resources.Resource, conns []resources.Connection) feeds {
	var out map[string]string
	for _, c := range conns {
		e, err := pn.cat.Get(c.Emitter)
		if err != nil {
			continue
		}
		for _, m := range c.Mappings {
			if m.Key != "" || appends(r, e, m) {
				continue
			}
			if out == nil {
				out = map[string]string{}
			}
			out[m.To] = pn.root(c.Emitter, m.From)
		}
	}
	return feeds{whole: out, parts: pn.partsOf(r, conns)}
}

// appends reports whether mapping m from e into r adds one element to a
// list rather than replacing the input.
func appends(r, e *resources.Resource, m resources.Mapping) bool {
	to, ok := r.Base.Input(m.To)
	if !ok || to.Schema == nil || to.Schema.Kind != schema.List {
		return false
	}
	from, ok := e.Base.Input(m.From)
	return ok && from.Schema != nil && from.Schema.Kind != schema.List
}

// root follows resource.input up the connections that feed it whole, to
// the input no connection feeds.
func (pn *pinner) root(resource, input string) string {
	for depth := 0; depth < 1000; depth++ {
		conns, err := pn.cat.Incoming(resource)
		if err != nil {
			break
		}
		next := ""
		for _, c := range conns {
			for _, m := range c.Mappings {
				if m.To == input && m.Key == "" {
					next, input = c.Emitter, m.From
				}
			}
		}
		if next == "" {
			break
		}
		resource = next
	}
	return resource + "." + input
}

// later names, for each unset or empty input of pin p of task n whose
// source has a task before n, that task: its outputs may give the value
// (a generated password's input is "" until its run sends one).
func (pn *pinner) later(n *planner.Node, p *Pin) map[string]string {
	var out map[string]string
	for in, src := range p.Sources {
		if v := p.Inputs[in]; v != nil && v != "" {
			continue
		}
		res := src[:lastDot(src)]
		for _, t := range pn.tasks[res] {
			if pn.before(t, n.ID) {
				if out == nil {
					out = map[string]string{}
				}
				out[in] = t
				break
			}
		}
	}
	return out
}

func lastDot(s string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '.' {
			return i
		}
	}
	return len(s)
}

// nodeInputs are what a node's pin keeps: how to reach it.
var nodeInputs = []string{resources.TransportInput, resources.IPInput, resources.SSHPortInput, resources.SSHUserInput, resources.SSHKeyInput}

// node returns the transport inputs of the node task n (of resource r,
// pinned to p) runs on, as the rule sees them; nil on this machine. A node
// never committed and outside the plan is seen as it is now: nothing could
// run on a node created but never run otherwise.
func (pn *pinner) node(n *planner.Node, r *resources.Resource, p *Pin) (map[string]any, error) {
	loc, _ := p.Inputs[resources.LocationInput].(string)
	if loc == "" {
		return nil, nil
	}
	var vals map[string]any
	switch t := pn.entry[loc]; {
	case loc == n.Resource && r.Base.Node:
		vals = p.Inputs
	case t != "" && pn.before(t, n.ID) && pn.pins[t] != nil:
		vals = pn.pins[t].Inputs
	default:
		snap, err := pn.snapshot(loc)
		if err != nil {
			return nil, err
		}
		if snap != nil {
			vals = snap.Inputs
		} else if vals, err = pn.cat.Effective(loc); err != nil {
			return nil, fmt.Errorf("node %s of %s: %w", loc, n.ID, err)
		}
	}
	out := make(map[string]any, len(nodeInputs))
	for _, k := range nodeInputs {
		if v, ok := vals[k]; ok {
			out[k] = v
		}
	}
	return out, nil
}

// fedInput reports whether a connection of conns feeds input.
func fedInput(conns []resources.Connection, input string) bool {
	for _, c := range conns {
		for _, m := range c.Mappings {
			if m.To == input {
				return true
			}
		}
	}
	return false
}
