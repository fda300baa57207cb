package planner

import (
	"errors"
	"fmt"

	"github.com/dominikbraun/graph"
	"github.com/solarops/solar/events"
)

// Entry is one selected staged entry.
type Entry struct {
	Key      string // the staged entry's key, "<resource>.<action>"
	Resource string
	Action   string
}

// Input is everything a plan is built from. Build reads it and keeps no
// reference to it.
type Input struct {
	Entries []Entry       // the selected staged entries, in staging order
	Rules   []events.Rule // every stored rule, in the order they were added
}

// Edge kinds as they appear in Edge.Kind, named after the rule keyword that
// made the edge.
const (
	EdgeReact = "on"    // made by a react rule: may trigger To
	EdgeAfter = "after" // made by an after rule: only orders
)

// Plan is an action graph. Encoded as JSON it is the stored form of a plan
// and of golden files: field names are stable and lists are never null.
type Plan struct {
	Nodes    []Node   `json:"nodes"`    // in creation order
	Edges    []Edge   `json:"edges"`    // in creation order; From runs before To
	Warnings []string `json:"warnings"` // rules that could not be honoured, and why
}

// Node is one action instance.
type Node struct {
	ID       string `json:"id"` // "<resource>.<action>#<instance>"
	Resource string `json:"resource"`
	Action   string `json:"action"`
	Instance int    `json:"instance"`
	// Staged says the node is in the plan because its entry was selected,
	// so it runs once its predecessors finished, whatever their events.
	// Only an action's instance #0 can be staged.
	Staged    bool   `json:"staged"`
	StagedKey string `json:"staged_key"`
	// TriggeredBy holds the canonical text of each react rule with an edge
	// into the node, in edge creation order, without duplicates.
	TriggeredBy []string `json:"triggered_by"`
	// Weight is the number of nodes on the longest path from this node to a
	// sink, itself included: the critical path a scheduler runs first.
	Weight int `json:"weight"`
}

// Edge orders From before To. There is at most one edge per (From, To,
// Rule); two rules joining the same pair, such as a react rule on "changed"
// and one on "failed", give two edges.
type Edge struct {
	From  string       `json:"from"`
	To    string       `json:"to"`
	Kind  string       `json:"kind"`  // EdgeReact or EdgeAfter
	Event events.Event `json:"event"` // the react rule's event; "" for after-edges
	Rule  string       `json:"rule"`  // canonical text of the rule that made it
}

// Graph converts the plan into a dominikbraun/graph directed acyclic graph
// keyed by node id, for callers that want that library's algorithms. Nodes
// carry their weight; edges carry "kind", "event" and "rule" attributes,
// and a pair joined by several rules becomes one edge with the first
// rule's attributes (the library holds one edge per pair). It fails only if
// the plan repeats a node id or names an unknown one, which a plan from
// Build never does; acyclicity is Build's guarantee and is not re-checked,
// since the library's cycle checks walk the graph.
//
// Beware that the library's TopologicalSort is quadratic in v0.23; the
// plan's own node order plus Weight is usually all a scheduler needs.
func (p *Plan) Graph() (graph.Graph[string, string], error) {
	g := graph.New(graph.StringHash, graph.Directed(), graph.Acyclic())
	for _, n := range p.Nodes {
		if err := g.AddVertex(n.ID, graph.VertexWeight(n.Weight)); err != nil {
			return nil, fmt.Errorf("plan node %s: %w", n.ID, err)
		}
	}
	for _, e := range p.Edges {
		err := g.AddEdge(e.From, e.To,
			graph.EdgeAttribute("kind", e.Kind),
			graph.EdgeAttribute("event", string(e.Event)),
			graph.EdgeAttribute("rule", e.Rule))
		if err != nil && !errors.Is(err, graph.ErrEdgeAlreadyExists) {
			return nil, fmt.Errorf("plan edge %s -> %s: %w", e.From, e.To, err)
		}
	}
	return g, nil
}
