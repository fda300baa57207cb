// Package planner owns the expansion of staged entries and event rules into
// an action graph (a plan), the resolution of cycles in that graph, and the
// plan's stable serialization and drawings (DOT, Mermaid; Reduce leaves
// out the after-edges a longer path implies, for a drawing only). It is pure: it
// knows no store and no terminal, and the same Input always gives the same
// Plan, byte for byte once encoded.
//
// # Edge direction
//
// An edge a -> b (dominikbraun/graph AddEdge(a, b), Edge{From: a, To: b})
// means a runs before b. Every other direction in this package follows.
//
// # Nodes
//
// A node is an action instance "<resource>.<action>#<n>". Instance #0 is the
// action itself; instances #1, #2... exist only to break cycles, so an action
// can run more than once in one plan.
//
// # Expansion
//
// Build works in three steps, each its own method of the builder, so that
// each can be read and tested on its own.
//
// Step 1 is the react expansion, depth first. For each selected entry in
// staging order: if its action has no instance yet, #0 is created and
// visited; the action's first instance is marked staged with the entry's
// key. Visiting a node u takes the react rules whose emitter is u's action,
// in the order the rules were added, and for each one looks at the
// subscriber's latest instance v:
//
//   - There is none: v#0 is created with the edge u -> v#0 and visited at
//     once, before the next rule (this is what "depth first" means).
//   - The edge u -> v closes no cycle: it is added, once.
//   - It would close a cycle, because v already leads to u. If u is itself
//     an instance made to break a cycle (#1 or later), the rule leads back
//     into the cycle and is not fired again. Otherwise v#(k+1) is created
//     with the edge u -> v#(k+1) and visited. A rule creates at most one
//     instance, so expansion ends.
//
// While u's action already has a later instance than u, a subscriber is
// attached after that last instance instead (edge last -> v), so that
// every subscriber that does not lead back into a cycle runs after the
// action's last run. If that edge would close a cycle, the subscriber leads
// back into it, and the edge is taken from u as above.
//
// Step 2 applies the dependency rules in the order they were added.
// "after E.a S.b" adds E.a's last instance -> S.b#0 when both actions are
// in the plan and no edge joins the two yet; it adds no node. If the edge
// would close a cycle made only of after-edges, Build fails with a
// *CycleError: such a cycle adds no work, so there is nothing to run twice
// and one of the rules must go. If the cycle goes through react edges, the
// react rules win: the after-edge is dropped and Plan.Warnings says so.
//
// Step 3 computes each node's critical-path weight (the number of nodes on
// the longest path from it to a sink, itself included) in reverse
// topological order, and verifies once that the plan is acyclic.
//
// There is at most one edge per (from, to, rule), so two rules joining the
// same nodes, say on "changed" and on "failed", give two edges. A rule
// repeated in Input.Rules counts once.
//
// # Cost
//
// Build runs in near-linear time: expansion visits each node once and each
// rule once per instance of its emitter, and no step walks the graph per
// edge. Cycle checks use a topological order kept up to date as the graph
// grows (order.go): during expansion an edge from the node being visited is
// checked in O(1) from the depth-first search's own state, and the rare
// edge from an earlier instance is placed with Pearce and Kelly's dynamic
// topological sort, which searches only the nodes ordered between its
// ends. After rules are checked all at once with one topological sort and,
// only if they close cycles, one strongly connected components pass, so
// that only the edges inside a cycle are decided one at a time.
// dominikbraun/graph's PreventCycles walks the whole graph for every edge,
// which is why it is not used to build the plan; Plan.Graph converts a
// finished plan for callers that want that library's algorithms.
package planner
