package planner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/dominikbraun/graph"
	"github.com/solarops/solar/events"
)

var allEvents = []events.Event{events.Changed, events.OK, events.Success, events.Failed, events.Any}

// randomInput makes a small random universe of 3 to 12 actions with random
// react and after rules between distinct actions (cycles included) and a
// random non-empty selection of them staged in random order.
func randomInput(rng *rand.Rand) Input {
	resources := []string{"a", "b", "c", "d", "e", "f"}
	actionNames := []string{"run", "reload"}
	var universe []events.Ref
	for _, r := range resources {
		for _, a := range actionNames {
			universe = append(universe, events.Ref{Resource: r, Action: a})
		}
	}
	rng.Shuffle(len(universe), func(i, j int) { universe[i], universe[j] = universe[j], universe[i] })
	refs := universe[:3+rng.IntN(10)]

	var in Input
	for range rng.IntN(3*len(refs) + 1) {
		e := rng.IntN(len(refs))
		s := rng.IntN(len(refs) - 1)
		if s >= e {
			s++
		}
		r := events.Rule{Kind: events.React, Emitter: refs[e], Subscriber: refs[s], Event: allEvents[rng.IntN(len(allEvents))]}
		if rng.IntN(10) < 3 {
			r.Kind, r.Event = events.After, ""
		}
		in.Rules = append(in.Rules, r)
	}
	for _, i := range rng.Perm(len(refs))[:1+rng.IntN(len(refs))] {
		in.Entries = append(in.Entries, Entry{Key: refs[i].String(), Resource: refs[i].Resource, Action: refs[i].Action})
	}
	return in
}

func TestBuildProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(2024, 6))
	const runs = 5000
	var built, cycles, warned, extra int
	for run := range runs {
		in := randomInput(rng)
		p, err := Build(in)
		if err := checkAfterRules(in, p, err); err != nil {
			t.Fatalf("run %d: %v\ninput: %s", run, err, describe(in))
		}
		if err != nil {
			cycles++
			if err := checkCycleError(in, err); err != nil {
				t.Fatalf("run %d: %v\ninput: %s", run, err, describe(in))
			}
			continue
		}
		built++
		if len(p.Warnings) > 0 {
			warned++
		}
		for _, n := range p.Nodes {
			if n.Instance > 0 {
				extra++
				break
			}
		}
		if err := checkPlan(in, p); err != nil {
			t.Fatalf("run %d: %v\ninput: %s\nedges: %q", run, err, describe(in), edgeTexts(p))
		}
	}
	// The generator must exercise every path, or the invariants above prove
	// little.
	if built < runs/2 || cycles == 0 || warned == 0 || extra < runs/20 {
		t.Errorf("weak generator: %d built, %d dependency cycles, %d with warnings, %d with cycle-breaking instances",
			built, cycles, warned, extra)
	}
}

func describe(in Input) string {
	var sb strings.Builder
	sb.WriteString("staged")
	for _, e := range in.Entries {
		sb.WriteString(" " + e.Key)
	}
	for _, r := range in.Rules {
		sb.WriteString("; " + r.String())
	}
	return sb.String()
}

// checkAfterRules compares Build's handling of after rules with the
// definition: starting from the plan of the react rules alone, take the
// after rules in order and add E's last instance -> S#0 unless an edge
// joins them already; an edge closing a cycle made only of after-edges
// fails the build, and one closing a cycle through react edges is dropped
// with a warning.
func checkAfterRules(in Input, p *Plan, err error) error {
	base, rerr := build(Input{Entries: in.Entries, Rules: reactOnly(in.Rules)}, false)
	if rerr != nil {
		return fmt.Errorf("react rules alone fail: %v", rerr)
	}
	type edge struct{ from, to string }
	var edges []edge
	kinds := map[edge]string{}
	last := map[string]string{}
	for _, n := range base.Nodes {
		last[actionOf(n.ID)] = n.ID
	}
	for _, e := range base.Edges {
		edges = append(edges, edge{e.From, e.To})
		kinds[edge{e.From, e.To}] = e.Kind
	}
	reaches := func(from, to string, afterOnly bool) bool {
		seen := map[string]bool{from: true}
		stack := []string{from}
		for len(stack) > 0 {
			v := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if v == to {
				return true
			}
			for _, e := range edges {
				if e.from == v && !seen[e.to] && (!afterOnly || kinds[e] == EdgeAfter) {
					seen[e.to] = true
					stack = append(stack, e.to)
				}
			}
		}
		return false
	}
	want := edgeTexts(base)
	var dropped []string
	done := map[string]bool{}
	// The operator's after rules, then the implicit per-resource order,
	// which never fails a build nor warns.
	var present []events.Ref
	for _, n := range base.Nodes {
		if n.Instance == 0 {
			present = append(present, events.Ref{Resource: n.Resource, Action: n.Action})
		}
	}
	rules := slices.Clone(in.Rules)
	implicit := map[int]bool{}
	for _, r := range resourceOrderRules(present) {
		implicit[len(rules)] = true
		rules = append(rules, r)
	}
	for i, r := range rules {
		text := r.String()
		if r.Kind != events.After || done[text] && !implicit[i] {
			continue
		}
		done[text] = true
		x, okx := last[r.Emitter.String()]
		_, oky := last[r.Subscriber.String()]
		y := r.Subscriber.String() + "#0"
		if !okx || !oky {
			continue
		}
		if _, joined := kinds[edge{x, y}]; joined {
			continue
		}
		if reaches(y, x, false) {
			if implicit[i] {
				continue
			}
			if reaches(y, x, true) {
				var ce *CycleError
				if !errors.As(err, &ce) || ce.Rules[0] != text {
					return fmt.Errorf("want the dependency cycle closed by %q, got %v", text, err)
				}
				return nil
			}
			dropped = append(dropped, fmt.Sprintf("dropped %q", text))
			continue
		}
		edges = append(edges, edge{x, y})
		kinds[edge{x, y}] = EdgeAfter
		want = append(want, x+" -> "+y+" (after)")
	}
	if err != nil {
		return fmt.Errorf("want a plan, got %v", err)
	}
	if !slices.Equal(want, edgeTexts(p)) {
		return fmt.Errorf("edges %q, want %q", edgeTexts(p), want)
	}
	var got []string
	for _, w := range p.Warnings {
		got = append(got, w[:strings.Index(w, ":")])
	}
	if !slices.Equal(dropped, got) {
		return fmt.Errorf("warnings %q, want %q", p.Warnings, dropped)
	}
	return nil
}

// checkCycleError checks that a failed Build names a real cycle of after
// rules, and that the react rules alone plan fine.
func checkCycleError(in Input, err error) error {
	var ce *CycleError
	if !errors.As(err, &ce) || !errors.Is(err, ErrDependencyCycle) {
		return fmt.Errorf("unexpected error %v", err)
	}
	if len(ce.Cycle) < 2 || ce.Cycle[0] != ce.Cycle[len(ce.Cycle)-1] || len(ce.Rules) != len(ce.Cycle)-1 {
		return fmt.Errorf("malformed cycle %q with rules %q", ce.Cycle, ce.Rules)
	}
	for i, text := range ce.Rules {
		from, to := actionOf(ce.Cycle[i]), actionOf(ce.Cycle[i+1])
		if want := "after " + from + " " + to; text != want {
			return fmt.Errorf("cycle step %s -> %s blamed on %q, want %q", ce.Cycle[i], ce.Cycle[i+1], text, want)
		}
		if !slices.ContainsFunc(in.Rules, func(r events.Rule) bool { return r.String() == text }) {
			return fmt.Errorf("cycle blames %q, which is not an input rule", text)
		}
	}
	if _, err := Build(Input{Entries: in.Entries, Rules: reactOnly(in.Rules)}); err != nil {
		return fmt.Errorf("react rules alone fail: %v", err)
	}
	return nil
}

func actionOf(id string) string { return id[:strings.LastIndexByte(id, '#')] }

func reactOnly(rs []events.Rule) []events.Rule {
	var out []events.Rule
	for _, r := range rs {
		if r.Kind == events.React {
			out = append(out, r)
		}
	}
	return out
}

// checkPlan checks the invariants every plan must satisfy, by brute force.
func checkPlan(in Input, p *Plan) error {
	idx := map[string]int{}
	last := map[string]int{} // action -> index of its last instance
	for i, n := range p.Nodes {
		if _, dup := idx[n.ID]; dup {
			return fmt.Errorf("node id %s repeated", n.ID)
		}
		idx[n.ID] = i
		action := n.Resource + "." + n.Action
		if n.ID != fmt.Sprintf("%s#%d", action, n.Instance) {
			return fmt.Errorf("node %s has fields %s/%s/%d", n.ID, n.Resource, n.Action, n.Instance)
		}
		if prev, ok := last[action]; n.Instance > 0 && (!ok || p.Nodes[prev].Instance != n.Instance-1) {
			return fmt.Errorf("node %s does not follow instance #%d", n.ID, n.Instance-1)
		}
		last[action] = i
	}

	texts := map[string]events.Rule{}
	for _, r := range in.Rules {
		texts[r.String()] = r
	}
	// The implicit per-resource order joins actions of one resource.
	for _, e := range p.Edges {
		if r, ok := strings.CutSuffix(e.Rule, " (same resource)"); ok {
			rule, err := events.Parse(r)
			if err != nil || rule.Kind != events.After || rule.Emitter.Resource != rule.Subscriber.Resource {
				return fmt.Errorf("edge %s -> %s has a bad implicit rule %q", e.From, e.To, e.Rule)
			}
			texts[e.Rule] = rule
		}
	}
	succ := make([][]int, len(p.Nodes))
	pred := make([][]int, len(p.Nodes))
	seenEdge := map[string]bool{}
	triggers := make([][]string, len(p.Nodes))
	for _, e := range p.Edges {
		from, ok1 := idx[e.From]
		to, ok2 := idx[e.To]
		if !ok1 || !ok2 {
			return fmt.Errorf("edge %s -> %s names an unknown node", e.From, e.To)
		}
		r, ok := texts[e.Rule]
		if !ok {
			return fmt.Errorf("edge %s -> %s made by unknown rule %q", e.From, e.To, e.Rule)
		}
		if r.Emitter.String() != actionOf(e.From) || r.Subscriber.String() != actionOf(e.To) ||
			r.Kind.String() != e.Kind || r.Event != e.Event {
			return fmt.Errorf("edge %+v does not match its rule", e)
		}
		key := e.From + " " + e.To + " " + e.Rule
		if seenEdge[key] {
			return fmt.Errorf("edge %s repeated", key)
		}
		seenEdge[key] = true
		succ[from] = append(succ[from], to)
		pred[to] = append(pred[to], from)
		if e.Kind == EdgeReact && !slices.Contains(triggers[to], e.Rule) {
			triggers[to] = append(triggers[to], e.Rule)
		}
	}

	// Acyclic, checked twice: by Kahn's algorithm here and by the graph
	// library on the converted plan.
	indeg := make([]int, len(p.Nodes))
	for v := range p.Nodes {
		indeg[v] = len(pred[v])
	}
	var queue []int
	for v, d := range indeg {
		if d == 0 {
			queue = append(queue, v)
		}
	}
	for head := 0; head < len(queue); head++ {
		for _, w := range succ[queue[head]] {
			if indeg[w]--; indeg[w] == 0 {
				queue = append(queue, w)
			}
		}
	}
	if len(queue) != len(p.Nodes) {
		return errors.New("plan has a cycle")
	}
	g, err := p.Graph()
	if err != nil {
		return fmt.Errorf("Graph: %v", err)
	}
	if _, err := graph.TopologicalSort(g); err != nil {
		return fmt.Errorf("graph library: %v", err)
	}

	// Weights are longest paths to a sink, in nodes.
	for i := len(queue) - 1; i >= 0; i-- {
		v := queue[i]
		w := 1
		for _, s := range succ[v] {
			w = max(w, p.Nodes[s].Weight+1)
		}
		if p.Nodes[v].Weight != w {
			return fmt.Errorf("node %s has weight %d, want %d", p.Nodes[v].ID, p.Nodes[v].Weight, w)
		}
	}

	// Exactly the selected entries are staged, on instance #0.
	stagedBy := map[string]string{}
	for _, e := range in.Entries {
		id := e.Key + "#0"
		stagedBy[id] = e.Key
		n, ok := idx[id]
		if !ok || !p.Nodes[n].Staged || p.Nodes[n].StagedKey != e.Key {
			return fmt.Errorf("entry %s has no staged node", e.Key)
		}
	}
	for v, n := range p.Nodes {
		if n.Staged && stagedBy[n.ID] != n.StagedKey {
			return fmt.Errorf("node %s staged by %q, which is not selected", n.ID, n.StagedKey)
		}
		// Work comes only from entries and react rules.
		if !n.Staged && len(triggers[v]) == 0 {
			return fmt.Errorf("node %s is neither staged nor triggered", n.ID)
		}
		want := triggers[v]
		if want == nil {
			want = []string{}
		}
		if n.TriggeredBy == nil || !slices.Equal(n.TriggeredBy, want) {
			return fmt.Errorf("node %s triggered by %q, want %q", n.ID, n.TriggeredBy, want)
		}
	}

	reaches := func(from, to int) bool {
		seen := map[int]bool{from: true}
		stack := []int{from}
		for len(stack) > 0 {
			v := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if v == to {
				return true
			}
			for _, w := range succ[v] {
				if !seen[w] {
					seen[w] = true
					stack = append(stack, w)
				}
			}
		}
		return false
	}
	instances := func(action string) []int {
		var out []int
		for i, n := range p.Nodes {
			if actionOf(n.ID) == action {
				out = append(out, i)
			}
		}
		return out
	}
	targeting := map[string]int{}
	for _, r := range in.Rules {
		if r.Kind == events.React && r.Emitter != r.Subscriber {
			targeting[r.Subscriber.String()]++
		}
	}
	for action, l := range last {
		if n := p.Nodes[l].Instance + 1; n > 1+targeting[action] {
			return fmt.Errorf("%s has %d instances for %d react rules targeting it", action, n, targeting[action])
		}
	}
	for _, r := range in.Rules {
		e, s := r.Emitter.String(), r.Subscriber.String()
		le, eIn := last[e]
		if r.Kind != events.React || !eIn {
			continue
		}
		// The rule fired: the subscriber is in the plan through an edge of
		// this rule, and it runs after the emitter's last instance unless
		// it leads back into a cycle through it.
		if _, sIn := last[s]; !sIn || !slices.ContainsFunc(p.Edges, func(x Edge) bool { return x.Rule == r.String() }) {
			return fmt.Errorf("rule %q did not fire", r)
		}
		after, back := false, false
		for _, v := range instances(s) {
			after = after || reaches(le, v)
			back = back || reaches(v, le)
		}
		if !after && !back {
			return fmt.Errorf("rule %q: no %s runs after %s", r, s, p.Nodes[le].ID)
		}
	}

	// After rules add no work.
	q, err := Build(Input{Entries: in.Entries, Rules: reactOnly(in.Rules)})
	if err != nil {
		return fmt.Errorf("react rules alone: %v", err)
	}
	if !slices.Equal(nodeIDs(p), nodeIDs(q)) {
		return fmt.Errorf("after rules changed the nodes: %q, without them %q", nodeIDs(p), nodeIDs(q))
	}

	// Deterministic: a second build encodes to the same bytes.
	again, err := Build(in)
	if err != nil {
		return fmt.Errorf("second build: %v", err)
	}
	if a, b := mustJSON(p), mustJSON(again); !bytes.Equal(a, b) {
		return fmt.Errorf("two builds differ:\n%s\n%s", a, b)
	}
	return nil
}

func mustJSON(p *Plan) []byte {
	b, err := json.Marshal(p)
	if err != nil {
		panic(err)
	}
	return b
}
