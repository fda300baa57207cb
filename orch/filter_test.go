package orch

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/solarops/solar/planner"
)

// filterPlan is
//
//	a.run#0 -> b.run#0 -> c.run#0 -> d.run#0 -> c.run#1
//	              \-> e.run#0
//
// with c.run twice, as a cycle broken by the planner leaves it.
func filterPlan() *planner.Plan {
	node := func(id string) planner.Node {
		ra, inst, _ := strings.Cut(id, "#")
		r, a, _ := strings.Cut(ra, ".")
		return planner.Node{ID: id, Resource: r, Action: a, Instance: int(inst[0] - '0')}
	}
	edge := func(from, to string) planner.Edge {
		return planner.Edge{From: from, To: to, Kind: planner.EdgeAfter}
	}
	return &planner.Plan{
		Nodes: []planner.Node{node("a.run#0"), node("b.run#0"), node("c.run#0"), node("d.run#0"), node("c.run#1"), node("e.run#0")},
		Edges: []planner.Edge{
			edge("a.run#0", "b.run#0"), edge("b.run#0", "c.run#0"), edge("c.run#0", "d.run#0"),
			edge("d.run#0", "c.run#1"), edge("b.run#0", "e.run#0"),
		},
	}
}

func TestFilter(t *testing.T) {
	all := []string{"a.run#0", "b.run#0", "c.run#0", "c.run#1", "d.run#0", "e.run#0"}
	tests := []struct {
		name         string
		starts, ends []string
		want         []string
	}{
		{name: "nothing given keeps all", want: all},
		{name: "start keeps what follows", starts: []string{"b.run#0"}, want: []string{"b.run#0", "c.run#0", "c.run#1", "d.run#0", "e.run#0"}},
		{name: "end keeps what leads to it", ends: []string{"d.run#0"}, want: []string{"a.run#0", "b.run#0", "c.run#0", "d.run#0"}},
		{name: "start and end keep the path between", starts: []string{"b.run#0"}, ends: []string{"d.run#0"}, want: []string{"b.run#0", "c.run#0", "d.run#0"}},
		{name: "an action name means every instance as start", starts: []string{"c.run"}, want: []string{"c.run#0", "c.run#1", "d.run#0"}},
		{name: "an action name means every instance as end", ends: []string{"c.run"}, want: []string{"a.run#0", "b.run#0", "c.run#0", "c.run#1", "d.run#0"}},
		{name: "one instance only", starts: []string{"c.run#1"}, want: []string{"c.run#1"}},
		{name: "several starts", starts: []string{"e.run", "d.run"}, want: []string{"c.run#1", "d.run#0", "e.run#0"}},
		{name: "several ends", ends: []string{"e.run", "a.run"}, want: []string{"a.run#0", "b.run#0", "e.run#0"}},
		{name: "start on another branch than end keeps nothing", starts: []string{"e.run"}, ends: []string{"d.run"}, want: []string{}},
		{name: "end before start keeps nothing", starts: []string{"d.run"}, ends: []string{"b.run"}, want: []string{}},
		{name: "start equal to end keeps it", starts: []string{"b.run"}, ends: []string{"b.run#0"}, want: []string{"b.run#0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keep, err := Filter(filterPlan(), tt.starts, tt.ends)
			if err != nil {
				t.Fatalf("Filter: %v", err)
			}
			got := []string{}
			for id, ok := range keep {
				if ok {
					got = append(got, id)
				}
			}
			slices.Sort(got)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("kept (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFilterUnknownTask(t *testing.T) {
	tests := []struct {
		name         string
		starts, ends []string
		bad          string
	}{
		{name: "unknown action", starts: []string{"x.run"}, bad: `"x.run"`},
		{name: "unknown instance", ends: []string{"c.run#7"}, bad: `"c.run#7"`},
		{name: "resource without action", starts: []string{"c"}, bad: `"c"`},
		{name: "empty instance", starts: []string{"c.run#"}, bad: `"c.run#"`},
		{name: "one bad among good ones", starts: []string{"a.run"}, ends: []string{"d.run", "z.stop"}, bad: `"z.stop"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keep, err := Filter(filterPlan(), tt.starts, tt.ends)
			if !errors.Is(err, ErrUnknownTask) {
				t.Fatalf("Filter = %v, %v; want ErrUnknownTask", keep, err)
			}
			if !strings.Contains(err.Error(), tt.bad) {
				t.Errorf("error %q does not name %s", err, tt.bad)
			}
		})
	}
}

// The original Solar's rule: a task is kept by --start only when all its
// predecessors are kept (or it is a start). With after a c and after b c,
// --start a keeps a only: c must not run after b was filtered out.
func TestFilterStartNeedsEveryPredecessor(t *testing.T) {
	node := func(id string) planner.Node { return planner.Node{ID: id + ".run#0", Resource: id, Action: "run"} }
	edge := func(from, to string) planner.Edge {
		return planner.Edge{From: from + ".run#0", To: to + ".run#0", Kind: planner.EdgeAfter}
	}
	p := &planner.Plan{
		Nodes: []planner.Node{node("a"), node("b"), node("c"), node("d")},
		Edges: []planner.Edge{edge("a", "c"), edge("b", "c"), edge("a", "d")},
	}
	for _, tt := range []struct {
		starts []string
		want   string
	}{
		{[]string{"a.run"}, "a.run#0 d.run#0"},
		{[]string{"a.run", "b.run"}, "a.run#0 b.run#0 c.run#0 d.run#0"},
		{[]string{"c.run"}, "c.run#0"},
	} {
		keep, err := Filter(p, tt.starts, nil)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for id := range keep {
			got = append(got, id)
		}
		slices.Sort(got)
		if strings.Join(got, " ") != tt.want {
			t.Errorf("--start %v keeps %v, want %s", tt.starts, got, tt.want)
		}
	}
}

// Reports and reviews list tasks after their predecessors, whatever order
// the plan stores them in.
func TestOrderedIsTopological(t *testing.T) {
	p := filterPlan()
	slices.Reverse(p.Nodes) // stored order must not matter
	pos := map[string]int{}
	for i, n := range Ordered(p) {
		pos[n.ID] = i
	}
	if len(pos) != len(p.Nodes) {
		t.Fatalf("Ordered returned %d tasks, want %d", len(pos), len(p.Nodes))
	}
	for _, e := range p.Edges {
		if pos[e.From] > pos[e.To] {
			t.Errorf("%s listed after its successor %s", e.From, e.To)
		}
	}
}
