// Package orch turns staged changes into plans and runs them.
//
// A plan is made by Process (process.go): the selected staged entries go
// through the planner, and the action graph is stored with one record per
// task (plans.go, codec.go) and each task's pin (pin.go, pinning.go).
// ActionPlan (action.go) stores a plan of one resource's one action
// without the planner, for "resource action"; CheckAction checks that
// task without storing it. A
// run feeds every task exactly its pin (values, sensitivity, node values,
// base by digest) plus the outputs earlier tasks of the plan sent to the
// inputs it comes from; a plan made before pins runs with the catalog's
// values. Metaparameters are not pinned: retry, delay, timeout, sema and
// the rates (rate, limit, burst: rates.go) are the resource's current ones. Commands read plans back through
// summaries computed in one transaction each (Report, Show, Graph, Logs:
// they show the values each task was pinned to, showplan.go, and mark a
// stale plan, stalemark.go), edit them while they run (edit.go,
// filter.go), predict them (check.go: check mode, which refuses a stale
// plan), and ask their runner to stop (Stop, stop.go).
//
// A plan is run by Runner.Run (run.go), in steps: take the plan's claim
// from the store's locks (claim.go), claim and load it in one transaction
// (prepare.go: every task's pin, resource, base and metaparameters; each
// base written from the store into this machine's base cache once per
// digest, basecache.go), fence
// every later write with the claim, clear what a dead runner left, wire
// the transports to the nodes (transports.go), walk, and finish. A run is
// three parts with one job each, wired by newExecution:
//   - the ledger (ledger.go, commit.go) writes: states that need not be
//     durable yet are buffered and written behind the walk; a finished
//     task's state, the commit of its staged entry, the outputs it sent and
//     the refreshes it left go in one transaction, durable before any task
//     that depends on it starts.
//   - the attempt runner (attempt.go) runs a task's attempts, with retries,
//     delay and timeout, under its resource's lock and its limits' slots
//     (reslock.go, over store.Locks), through its handler and transport
//     (orch/handler). A task's attempts are numbered over the plan's
//     whole life, each run going on from the latest (attemptlog.go), and
//     each attempt's end record keeps who ran it (actor, host, run).
//   - the control watcher (control.go) sees what other commands asked of
//     the run: a stop request, a kill, tasks skipped or marked NOOP (orch
//     noop, noop.go) by a live edit.
//
// The scheduling is package orch/walk's, which knows nothing of the store,
// handlers, resources or events. orch gives it tasks (walktask.go): each
// incoming edge carries a walk.Trigger made from its rule's event, and each
// task its walk.Limits (its resource, its node's --per-node, the semaphores
// of its base, parsed there once); the ledger and the attempt runner are
// its callbacks. The run-time semantics of react and after rules (the
// truth table of the SPEC, section 4) are the walker's, tested there; the
// mapping of events to triggers is orch's, tested here.
package orch
