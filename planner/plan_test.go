package planner

import (
	"testing"

	"github.com/dominikbraun/graph"
	"github.com/google/go-cmp/cmp"
)

func TestPlanGraph(t *testing.T) {
	p := mustBuild(t, Input{
		Entries: staged("k.run", "g.run"),
		Rules:   rules(t, append(keystoneRules, "on g.run failed gc.run", "after k.run g.run")...),
	})
	g, err := p.Graph()
	if err != nil {
		t.Fatal(err)
	}
	if order, _ := g.Order(); order != len(p.Nodes) {
		t.Errorf("graph has %d vertices, plan %d nodes", order, len(p.Nodes))
	}
	// g.run#0 -> gc.run#0 is made by two rules: the library keeps one edge.
	if size, _ := g.Size(); size != len(p.Edges)-1 {
		t.Errorf("graph has %d edges, want %d", size, len(p.Edges)-1)
	}
	e, err := g.Edge("k.run#0", "g.run#0")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"kind": EdgeAfter, "event": "", "rule": "after k.run g.run"}
	if diff := cmp.Diff(want, e.Properties.Attributes); diff != "" {
		t.Errorf("edge attributes (-want +got):\n%s", diff)
	}
	_, props, err := g.VertexWithProperties("k.run#0")
	if err != nil || props.Weight != 6 {
		t.Errorf("k.run#0 weight = %d, %v; want 6", props.Weight, err)
	}
	// The library must see the same acyclic graph: its sort succeeds and
	// respects every plan edge.
	order, err := graph.TopologicalSort(g)
	if err != nil {
		t.Fatal(err)
	}
	pos := map[string]int{}
	for i, id := range order {
		pos[id] = i
	}
	for _, e := range p.Edges {
		if pos[e.From] >= pos[e.To] {
			t.Errorf("library order %q puts %s before %s", order, e.To, e.From)
		}
	}
}
