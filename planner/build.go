package planner

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/solarops/solar/events"
)

// Build expands in into a plan, as the package documentation describes.
// It is deterministic: identical Input gives an identical Plan. It fails
// with ErrEmpty when no entry is selected, with a *CycleError when after
// rules alone form a cycle, and with an error wrapping events.ErrBadRule
// for a rule of unknown kind.
func Build(in Input) (*Plan, error) { return build(in, true) }

// build is Build; tests turn the implicit per-resource order off to check
// the operator's rules against a reference.
func build(in Input, resourceOrder bool) (*Plan, error) {
	if len(in.Entries) == 0 {
		return nil, ErrEmpty
	}
	b, err := newBuilder(in)
	if err != nil {
		return nil, err
	}
	b.expand(in.Entries)
	if resourceOrder {
		b.addResourceOrder()
	}
	if err := b.addAfterEdges(); err != nil {
		return nil, err
	}
	return b.plan(in.Entries)
}

// builder holds one Build's state. Everything is indexed by dense int32 ids
// (actions, rules, nodes, edges) so that the hot paths touch flat slices;
// strings appear only when the plan is written out.
type builder struct {
	rules []events.Rule // as given, in input order
	text  []string      // canonical rule texts, filled when first needed
	dup   []bool        // the rule repeats an earlier one and is ignored

	acts   []action
	actIdx map[events.Ref]int32
	emit   []int32 // per rule: emitter action
	sub    []int32 // per rule: subscriber action

	// react rules by emitter action, in rule order: those of action a are
	// reactList[reactStart[a]:reactStart[a+1]].
	reactStart []int32
	reactList  []int32
	broke      []bool // per rule: it already made a cycle-breaking instance
	// soft marks the implicit rules of addResourceOrder: dropped without a
	// word when they would close a cycle, since no operator wrote them.
	soft []bool

	g     dag
	nodes []node
	// per edge (same ids as g.es): the rule that made it, and the next edge
	// with the same ends, to tell duplicates from parallel edges.
	edgeRule []int32
	nextSame []int32
	pairs    map[uint64]int32 // (from, to) -> first edge between them

	warnings []string
}

type action struct {
	ref         events.Ref
	first, last int32 // first and latest instance, or none
	count       int32 // instances so far
}

type node struct {
	act      int32
	instance int32
	entry    int32 // index of the selected entry that staged it, or none
}

func newBuilder(in Input) (*builder, error) {
	// Capacities are guesses for the usual store, where most actions are
	// staged and each has a few rules; slices and maps grow past them.
	guess := len(in.Entries) + len(in.Rules)/4
	b := &builder{
		rules:  in.Rules,
		text:   make([]string, len(in.Rules)),
		actIdx: make(map[events.Ref]int32, guess),
		emit:   make([]int32, len(in.Rules)),
		sub:    make([]int32, len(in.Rules)),
		dup:    make([]bool, len(in.Rules)),
		broke:  make([]bool, len(in.Rules)),
		pairs:  make(map[uint64]int32, len(in.Rules)),
	}
	// Entries are interned first so that the common case, an action that is
	// both staged and named by rules, costs one map entry.
	for _, e := range in.Entries {
		b.intern(events.Ref{Resource: e.Resource, Action: e.Action})
	}
	type ruleKey struct {
		emit, sub int32
		kind      events.Kind
		event     events.Event
	}
	seen := make(map[ruleKey]struct{}, len(in.Rules))
	for i, r := range in.Rules {
		if r.Kind != events.React && r.Kind != events.After {
			return nil, fmt.Errorf("rule %d (%s -> %s) has unknown kind %d: %w", i, r.Emitter, r.Subscriber, r.Kind, events.ErrBadRule)
		}
		b.emit[i] = b.intern(r.Emitter)
		b.sub[i] = b.intern(r.Subscriber)
		k := ruleKey{b.emit[i], b.sub[i], r.Kind, r.Event}
		if _, dup := seen[k]; dup {
			b.dup[i] = true
			continue
		}
		seen[k] = struct{}{}
	}

	// Counting sort of react rules by emitter keeps rule order within each
	// action and needs no slice per action.
	b.reactStart = make([]int32, len(b.acts)+1)
	for i, r := range in.Rules {
		if r.Kind == events.React && !b.dup[i] {
			b.reactStart[b.emit[i]+1]++
		}
	}
	for a := range b.acts {
		b.reactStart[a+1] += b.reactStart[a]
	}
	b.reactList = make([]int32, b.reactStart[len(b.acts)])
	fill := make([]int32, len(b.acts))
	copy(fill, b.reactStart)
	for i, r := range in.Rules {
		if r.Kind == events.React && !b.dup[i] {
			a := b.emit[i]
			b.reactList[fill[a]] = int32(i)
			fill[a]++
		}
	}

	b.nodes = make([]node, 0, guess)
	b.g.vs = make([]vertex, 0, guess)
	b.g.es = make([]dagEdge, 0, len(in.Rules))
	b.edgeRule = make([]int32, 0, len(in.Rules))
	b.nextSame = make([]int32, 0, len(in.Rules))
	return b, nil
}

func (b *builder) intern(ref events.Ref) int32 {
	if a, ok := b.actIdx[ref]; ok {
		return a
	}
	a := int32(len(b.acts))
	b.acts = append(b.acts, action{ref: ref, first: none, last: none})
	b.actIdx[ref] = a
	return a
}

func (b *builder) newNode(a int32) int32 {
	v := b.g.open()
	act := &b.acts[a]
	b.nodes = append(b.nodes, node{act: a, instance: act.count, entry: none})
	act.count++
	if act.first == none {
		act.first = v
	}
	act.last = v
	return v
}

// edge adds x -> y for rule r unless that very edge exists. The caller has
// made room for it in the order.
func (b *builder) edge(x, y, r int32) {
	key := pairKey(x, y)
	first, ok := b.pairs[key]
	if ok {
		for e := first; e != none; e = b.nextSame[e] {
			if b.edgeRule[e] == r {
				return
			}
		}
	}
	e := b.g.addEdge(x, y)
	b.edgeRule = append(b.edgeRule, r)
	if ok {
		// Parallel edges are rare; putting the new one second keeps the
		// map untouched.
		b.nextSame = append(b.nextSame, b.nextSame[first])
		b.nextSame[first] = e
	} else {
		b.nextSame = append(b.nextSame, none)
		b.pairs[key] = e
	}
}

// frame is a node being visited: pos is its next react rule in reactList.
type frame struct {
	node, pos, end int32
}

// expand is step 1: the depth-first react expansion from the selected
// entries. The visit stack is explicit because a chain of rules can be as
// deep as the plan is large.
func (b *builder) expand(entries []Entry) {
	var stack []frame
	for i, e := range entries {
		a := b.actIdx[events.Ref{Resource: e.Resource, Action: e.Action}]
		u := b.acts[a].first
		fresh := u == none
		if fresh {
			u = b.newNode(a)
		}
		if b.nodes[u].entry == none {
			b.nodes[u].entry = int32(i)
		}
		if !fresh {
			continue // visited when it was created
		}
		stack = append(stack, b.frame(u))
		for len(stack) > 0 {
			f := &stack[len(stack)-1]
			if f.pos == f.end {
				b.g.close(f.node)
				stack = stack[:len(stack)-1]
				continue
			}
			r := b.reactList[f.pos]
			f.pos++
			if v := b.fire(f.node, r); v != none {
				stack = append(stack, b.frame(v))
			}
		}
	}
}

func (b *builder) frame(u int32) frame {
	a := b.nodes[u].act
	return frame{node: u, pos: b.reactStart[a], end: b.reactStart[a+1]}
}

// fire applies react rule r while visiting u. It returns the node it
// created, which the caller visits next, or none.
func (b *builder) fire(u, r int32) int32 {
	s := b.sub[r]
	// Subscribers go after the emitter's last instance, so that they see
	// its final run; see the package documentation.
	src := b.acts[b.nodes[u].act].last
	v := b.acts[s].last
	if v == none {
		// Here src is u: a later instance of u's action was created while
		// u was being visited, and visited in full, so it fired r already
		// and v would exist.
		v = b.newNode(s)
		b.edge(u, v, r) // the tree edge into a new node closes no cycle
		return v
	}
	if src != u && b.g.order(src, v) {
		b.edge(src, v, r)
		return none
	}
	if b.g.order(u, v) {
		b.edge(u, v, r)
		return none
	}
	// u -> v would close a cycle. An instance made to break a cycle does not
	// fire the rule that leads back into it, or expansion would never end.
	if b.nodes[u].instance > 0 || b.broke[r] {
		return none
	}
	b.broke[r] = true
	w := b.newNode(s)
	b.edge(u, w, r)
	return w
}

// addAfterEdges is step 2: dependency rules only order nodes that react
// expansion put in the plan.
//
// Its result is what adding the after-edges one by one in rule order
// gives, each kept unless it closes a cycle, but it gets there without
// checking them one by one in the common cases: after rules usually follow
// the order resources were created and connected in, which tends to run
// against the order expansion left, so each check would move many nodes.
// Instead all of them are proposed at once: if together they close no
// cycle, they all stay. Otherwise an edge between two strongly connected
// components of the graph with all of them lies on no cycle whatever is
// kept, so it stays; only the edges inside a component are decided one by
// one, in rule order.
func (b *builder) addAfterEdges() error {
	first := int32(len(b.g.es))
	for i, r := range b.rules {
		if r.Kind != events.After || b.dup[i] {
			continue
		}
		x, y := b.acts[b.emit[i]].last, b.acts[b.sub[i]].first
		if x == none || y == none {
			continue
		}
		if _, joined := b.pairs[pairKey(x, y)]; joined {
			continue // a react edge orders them already
		}
		b.edge(x, y, int32(i))
		b.g.es[len(b.g.es)-1].hidden = true
	}
	proposed := b.g.es[first:]
	if len(proposed) == 0 {
		return nil
	}
	if topo, ok := b.g.sort(true); ok {
		for i := range proposed {
			proposed[i].hidden = false
		}
		b.g.reorder(topo)
		return nil
	}
	comp := b.g.components()
	for i := range proposed {
		proposed[i].hidden = comp[proposed[i].from] == comp[proposed[i].to]
	}
	topo, ok := b.g.sort(false)
	if !ok {
		return fmt.Errorf("planner bug: edges between components of the plan form a cycle: %w", ErrDependencyCycle)
	}
	b.g.reorder(topo)
	for i := range proposed {
		e := &proposed[i]
		if !e.hidden {
			continue
		}
		x, y, r := e.from, e.to, b.edgeRule[first+int32(i)]
		if b.g.order(x, y) {
			e.hidden = false
			continue
		}
		if int(r) < len(b.soft) && b.soft[r] {
			continue
		}
		if p := b.g.path(y, x, b.isAfter); p != nil {
			return b.cycleError(r, x, p)
		}
		b.warnings = append(b.warnings, fmt.Sprintf(
			"dropped %q: %s -> %s would close the cycle %s, which react rules need",
			b.ruleText(r), b.id(x), b.id(y), b.cycleText(x, b.g.path(y, x, nil))))
	}
	return nil
}

// addResourceOrder orders the actions of one resource that are in the plan
// together, as an operator expects without writing it: run and update
// before its other actions (a restart after the run that installs), and
// remove after all of them. They are after rules appended behind the
// operator's own, so an explicit rule always wins; one that would close a
// cycle is dropped silently.
func (b *builder) addResourceOrder() {
	var present []events.Ref
	for a := range b.acts {
		if b.acts[a].first != none {
			present = append(present, b.acts[a].ref)
		}
	}
	for _, r := range resourceOrderRules(present) {
		b.rules = append(b.rules, r)
		b.text = append(b.text, r.String()+" (same resource)")
		b.emit = append(b.emit, b.actIdx[r.Emitter])
		b.sub = append(b.sub, b.actIdx[r.Subscriber])
		b.dup = append(b.dup, false)
		b.broke = append(b.broke, false)
		for len(b.soft) < len(b.rules)-1 {
			b.soft = append(b.soft, false)
		}
		b.soft = append(b.soft, true)
	}
}

// resourceOrderRules returns the implicit after rules between the actions
// present, sorted by resource, then by the order below, then by name.
func resourceOrderRules(present []events.Ref) []events.Rule {
	rank := func(action string) int {
		switch action {
		case "run":
			return 0
		case "update":
			return 1
		case "remove":
			return 3
		}
		return 2
	}
	refs := slices.Clone(present)
	slices.SortFunc(refs, func(x, y events.Ref) int {
		if c := strings.Compare(x.Resource, y.Resource); c != 0 {
			return c
		}
		if c := rank(x.Action) - rank(y.Action); c != 0 {
			return c
		}
		return strings.Compare(x.Action, y.Action)
	})
	var out []events.Rule
	for i := 0; i < len(refs); {
		j := i
		for j < len(refs) && refs[j].Resource == refs[i].Resource {
			j++
		}
		for _, x := range refs[i:j] {
			for _, y := range refs[i:j] {
				rx, ry := rank(x.Action), rank(y.Action)
				// run and update are alternatives, custom actions are
				// unordered among themselves.
				if rx >= ry || (rx == 0 && ry == 1) {
					continue
				}
				out = append(out, events.Rule{Kind: events.After, Emitter: x, Subscriber: y})
			}
		}
		i = j
	}
	return out
}

func pairKey(x, y int32) uint64 { return uint64(uint32(x))<<32 | uint64(uint32(y)) }

func (b *builder) isAfter(e int32) bool {
	return b.rules[b.edgeRule[e]].Kind == events.After
}

// cycleError describes the cycle that after rule r, adding x -> p[0],
// would close, where p is a path of after-edges from p[0] back to x.
func (b *builder) cycleError(r, x int32, p []int32) *CycleError {
	ce := &CycleError{
		Cycle: []string{b.id(x)},
		Rules: []string{b.ruleText(r)},
	}
	for i, v := range p {
		ce.Cycle = append(ce.Cycle, b.id(v))
		if i+1 < len(p) {
			ce.Rules = append(ce.Rules, b.afterRuleText(v, p[i+1]))
		}
	}
	return ce
}

// afterRuleText names the rule behind the after-edge x -> y.
func (b *builder) afterRuleText(x, y int32) string {
	first, ok := b.pairs[pairKey(x, y)]
	if !ok {
		return ""
	}
	for e := first; e != none; e = b.nextSame[e] {
		if b.isAfter(e) && !b.g.es[e].hidden {
			return b.ruleText(b.edgeRule[e])
		}
	}
	return ""
}

// cycleText prints the cycle x -> p... for a warning, shortened in the
// middle when long, since a react cycle can span much of a big plan.
func (b *builder) cycleText(x int32, p []int32) string {
	const keep = 4
	var sb strings.Builder
	sb.WriteString(b.id(x))
	for i, v := range p {
		if len(p) > 2*keep && i == keep {
			fmt.Fprintf(&sb, " -> ... (%d more)", len(p)-2*keep)
		}
		if len(p) > 2*keep && i >= keep && i < len(p)-keep {
			continue
		}
		sb.WriteString(" -> ")
		sb.WriteString(b.id(v))
	}
	return sb.String()
}

func (b *builder) id(v int32) string {
	n := b.nodes[v]
	return b.acts[n.act].ref.String() + "#" + strconv.Itoa(int(n.instance))
}

func (b *builder) ruleText(r int32) string {
	if b.text[r] == "" {
		b.text[r] = b.rules[r].String()
	}
	return b.text[r]
}

// plan is step 3: weights, the final acyclicity check, and the exported
// form.
func (b *builder) plan(entries []Entry) (*Plan, error) {
	nv := len(b.nodes)
	topo := b.g.topo()
	kept := 0
	for _, e := range b.g.es {
		if e.hidden {
			continue // a dropped after-edge
		}
		kept++
		if b.g.vs[e.from].ord >= b.g.vs[e.to].ord {
			return nil, fmt.Errorf("planner bug: edge %s -> %s breaks the topological order: %w", b.id(e.from), b.id(e.to), ErrDependencyCycle)
		}
	}
	weight := make([]int32, nv)
	for i := nv - 1; i >= 0; i-- {
		v := topo[i]
		w := int32(0)
		for e := b.g.vs[v].firstOut; e != none; e = b.g.es[e].nextOut {
			if !b.g.es[e].hidden {
				w = max(w, weight[b.g.es[e].to])
			}
		}
		weight[v] = w + 1
	}

	// All ids live in one string; nodes and edges share substrings of it.
	var sb strings.Builder
	size := 0
	for _, n := range b.nodes {
		ref := b.acts[n.act].ref
		size += len(ref.Resource) + len(ref.Action) + 2 + 10
	}
	sb.Grow(size)
	ends := make([]int, nv)
	for v, n := range b.nodes {
		ref := b.acts[n.act].ref
		sb.WriteString(ref.Resource)
		sb.WriteByte('.')
		sb.WriteString(ref.Action)
		sb.WriteByte('#')
		var digits [12]byte
		sb.Write(strconv.AppendInt(digits[:0], int64(n.instance), 10))
		ends[v] = sb.Len()
	}
	all := sb.String()
	ids := make([]string, nv)
	start := 0
	for v, end := range ends {
		ids[v] = all[start:end]
		start = end
	}

	p := &Plan{
		Nodes:    make([]Node, nv),
		Edges:    make([]Edge, 0, kept),
		Warnings: b.warnings,
	}
	if p.Warnings == nil {
		p.Warnings = []string{}
	}
	for i, e := range b.g.es {
		if e.hidden {
			continue
		}
		r := b.edgeRule[i]
		out := Edge{From: ids[e.from], To: ids[e.to], Kind: EdgeReact, Rule: b.ruleText(r)}
		if b.rules[r].Kind == events.After {
			out.Kind = EdgeAfter
		} else {
			out.Event = b.rules[r].Event
		}
		p.Edges = append(p.Edges, out)
	}

	// TriggeredBy lists share one backing array; a stamp per rule drops a
	// rule's second edge into the same node.
	triggers := make([]string, 0, len(b.g.es))
	stamp := make([]int32, len(b.rules))
	for v, n := range b.nodes {
		ref := b.acts[n.act].ref
		begin := len(triggers)
		for e := b.g.vs[v].firstIn; e != none; e = b.g.es[e].nextIn {
			r := b.edgeRule[e]
			if b.rules[r].Kind == events.React && stamp[r] != int32(v)+1 {
				stamp[r] = int32(v) + 1
				triggers = append(triggers, b.ruleText(r))
			}
		}
		out := Node{
			ID:          ids[v],
			Resource:    ref.Resource,
			Action:      ref.Action,
			Instance:    int(n.instance),
			TriggeredBy: triggers[begin:len(triggers):len(triggers)],
			Weight:      int(weight[v]),
		}
		if n.entry != none {
			out.Staged = true
			out.StagedKey = entries[n.entry].Key
		}
		p.Nodes[v] = out
	}
	return p, nil
}
