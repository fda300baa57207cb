package planner

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/solarops/solar/events"
)

// handPlan makes a plan of the given nodes and edges, each edge "a>b" (an
// after-edge) or "a~b" (a react edge on changed).
func handPlan(nodes []string, edges ...string) *Plan {
	p := &Plan{Nodes: []Node{}, Edges: []Edge{}, Warnings: []string{}}
	for _, n := range nodes {
		p.Nodes = append(p.Nodes, Node{ID: n})
	}
	for _, e := range edges {
		for i := range len(e) {
			switch e[i] {
			case '>':
				p.Edges = append(p.Edges, Edge{From: e[:i], To: e[i+1:], Kind: EdgeAfter, Rule: "after " + e})
			case '~':
				p.Edges = append(p.Edges, Edge{From: e[:i], To: e[i+1:], Kind: EdgeReact, Event: events.Changed, Rule: "on " + e})
			default:
				continue
			}
			break
		}
	}
	return p
}

// edgeText lists a plan's edges in handPlan's notation.
func edgeText(p *Plan) []string {
	out := []string{}
	for _, e := range p.Edges {
		sep := ">"
		if e.Kind == EdgeReact {
			sep = "~"
		}
		out = append(out, e.From+sep+e.To)
	}
	return out
}

func TestReduce(t *testing.T) {
	abcd := []string{"a", "b", "c", "d"}
	tests := []struct {
		name  string
		nodes []string
		edges []string
		want  []string
	}{
		{"diamond with shortcut", abcd,
			[]string{"a>b", "a>c", "b>d", "c>d", "a>d"},
			[]string{"a>b", "a>c", "b>d", "c>d"}},
		{"chain is its own reduction", abcd,
			[]string{"a>b", "b>c", "c>d"},
			[]string{"a>b", "b>c", "c>d"}},
		{"chain with shortcuts", abcd,
			[]string{"a>b", "a>c", "a>d", "b>c", "b>d", "c>d"},
			[]string{"a>b", "b>c", "c>d"}},
		{"react edge implied by ordering edges is kept", abcd,
			[]string{"a>b", "b>c", "a~c"},
			[]string{"a>b", "b>c", "a~c"}},
		{"after-edge implied through react edges is dropped", abcd,
			[]string{"a~b", "b~c", "a>c"},
			[]string{"a~b", "b~c"}},
		{"shortcut listed before the path", abcd,
			[]string{"a>d", "c>d", "b>c", "a>b"},
			[]string{"c>d", "b>c", "a>b"}},
		{"two rules on one pair both kept", abcd,
			[]string{"a~b", "a~b", "b>c"},
			[]string{"a~b", "a~b", "b>c"}},
		{"node order is not topological", abcd,
			[]string{"d>c", "c>b", "d>b", "b>a"},
			[]string{"d>c", "c>b", "b>a"}},
		{"a cycle is drawn whole", abcd,
			[]string{"a>b", "b>a", "a>c", "b>c"},
			[]string{"a>b", "b>a", "a>c", "b>c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := handPlan(tt.nodes, tt.edges...)
			before := edgeText(p)
			got := Reduce(p)
			if diff := cmp.Diff(tt.want, edgeText(got)); diff != "" {
				t.Errorf("Reduce edges (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, edgeText(p)); diff != "" {
				t.Errorf("Reduce changed the plan (-before +after):\n%s", diff)
			}
			if len(got.Nodes) != len(p.Nodes) {
				t.Errorf("Reduce kept %d nodes, want %d", len(got.Nodes), len(p.Nodes))
			}
		})
	}
}

// TestReduceBuiltChain reduces a plan Build made: in GenInput's chain every
// after rule r<i> -> r<i+3> is implied by the react edges.
func TestReduceBuiltChain(t *testing.T) {
	p := mustBuild(t, GenInput("chain", 6))
	got := Reduce(p)
	for _, e := range got.Edges {
		if e.Kind == EdgeAfter {
			t.Errorf("after-edge %s -> %s kept, though implied", e.From, e.To)
		}
	}
	reacts := 0
	for _, e := range p.Edges {
		if e.Kind == EdgeReact {
			reacts++
		}
	}
	if len(got.Edges) != reacts {
		t.Errorf("Reduce kept %d edges, want the %d react edges", len(got.Edges), reacts)
	}
	want := DOT(p, nil)
	if DOT(got, nil) == want {
		t.Error("reduced drawing equals the full one")
	}
	if DOT(p, nil) != want {
		t.Error("drawing the reduction changed the plan's drawing")
	}
}

// TestReduceRandom checks Reduce against its definition on random DAGs: the
// same pairs stay ordered, every react edge stays, and no after-edge kept
// is implied by a longer path.
func TestReduceRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(35, 35))
	for round := range 200 {
		n := 2 + rng.IntN(10)
		nodes := make([]string, n)
		for i := range nodes {
			nodes[i] = fmt.Sprint("n", i)
		}
		perm := rng.Perm(n) // node order is not the topological order
		var edges []string
		for i := range n {
			for j := i + 1; j < n; j++ {
				if rng.IntN(3) == 0 {
					sep := ">"
					if rng.IntN(4) == 0 {
						sep = "~"
					}
					edges = append(edges, nodes[perm[i]]+sep+nodes[perm[j]])
				}
			}
		}
		p := handPlan(nodes, edges...)
		got := Reduce(p)
		if !slices.Equal(closure(p), closure(got)) {
			t.Fatalf("round %d: %v reduced to %v changes the order", round, edges, edgeText(got))
		}
		for _, e := range p.Edges {
			if e.Kind == EdgeReact && !slices.Contains(got.Edges, e) {
				t.Fatalf("round %d: react edge %s -> %s dropped", round, e.From, e.To)
			}
		}
		for _, e := range got.Edges {
			if e.Kind == EdgeAfter && longerPath(got, e) {
				t.Fatalf("round %d: %v reduced to %v keeps implied %s -> %s", round, edges, edgeText(got), e.From, e.To)
			}
		}
	}
}

// closure lists every ordered pair "a b" the plan's edges imply, sorted.
func closure(p *Plan) []string {
	var out []string
	for _, n := range p.Nodes {
		for _, m := range reach(p, n.ID, -1) {
			out = append(out, n.ID+" "+m)
		}
	}
	slices.Sort(out)
	return out
}

// reach lists the nodes reachable from id by one edge or more, not using
// edge number skip.
func reach(p *Plan, id string, skip int) []string {
	seen := map[string]bool{}
	stack := []string{id}
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for i, e := range p.Edges {
			if i != skip && e.From == v && !seen[e.To] {
				seen[e.To] = true
				stack = append(stack, e.To)
			}
		}
	}
	out := []string{}
	for m := range seen {
		out = append(out, m)
	}
	slices.Sort(out)
	return out
}

// longerPath reports whether e.To is reachable from e.From without e.
func longerPath(p *Plan, e Edge) bool {
	i := slices.IndexFunc(p.Edges, func(f Edge) bool { return f == e })
	return slices.Contains(reach(p, e.From, i), e.To)
}
