// Package planner owns the expansion of staged entries and event rules into
// an action graph (a plan), the resolution of cycles in that graph, and the
// plan's stable serialization and drawings (DOT, Mermaid). It is pure: it
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
// Build works in three steps, each a separate loop so the order of events is
// easy to follow and to test:
//
//  1. React expansion, depth first. For each selected entry in staging
//     order: if its action has no instance yet, create #0; mark the action's
//     first instance as staged with the entry's key; visit new nodes. Visiting
//     a node u takes the react rules whose emitter is u's action, in the
//     order the rules were added, and for each one looks at the subscriber's
//     latest instance v:
//     - none: create v#0 with the edge u -> v#0 and visit v#0 at once, before
//     the next rule (this is what "depth first" means);
//     - the edge u -> v does not close a cycle: add it (once);
//     - it would close a cycle (v already reaches u): when u is itself an
//     instance made to break a cycle (#1 or later), the rule leads back into
//     the cycle and is not fired again; otherwise create v#(k+1) with the
//     edge u -> v#(k+1) and visit it. A rule creates at most one instance.
//     While u's action already has a later instance than u, its subscribers
//     are attached after that last instance instead (edge last -> v), so
//     every subscriber that does not lead back into a cycle runs after the
//     action's last run; if that edge would close a cycle, the edge is
//     taken from u as above.
//  2. Dependency rules, in the order they were added. "after E.a S.b" adds
//     E.a's last instance -> S.b#0 when both actions are in the plan and no
//     edge joins the two yet; it adds no node. If the edge would close a
//     cycle made only of after-edges, Build fails with a *CycleError: such a
//     cycle adds no work, so there is nothing to duplicate and one of the
//     rules is wrong. If the cycle goes through react edges, the react rules
//     win: the after-edge is dropped and Plan.Warnings says so.
//  3. Weights: each node's critical-path weight (the number of nodes on the
//     longest path from it to a sink, itself included), computed in reverse
//     topological order. The plan's acyclicity is verified once here.
//
// Rules are otherwise independent of one another, and a rule repeated in
// Input.Rules counts once.
//
// # Cost
//
// Expansion visits each node once and each rule once per instance of its
// emitter. Cycles are detected with an incremental topological order
// (Pearce and Kelly's dynamic topological sort) instead of a graph walk per
// edge: an edge that agrees with the current order costs O(1), and one that
// does not searches only the nodes ordered between its ends. Depth-first
// creation numbers new nodes after their parents, so most edges agree.
// dominikbraun/graph's PreventCycles walks the whole graph for every edge,
// which is why it is not used to build the plan; Plan.Graph converts a
// finished plan for callers that want that library's algorithms.
package planner
