// Package walk runs a graph of tasks in dependency order, in parallel
// within limits, and decides which task runs, which is skipped and why. It
// knows nothing of events, stores or handlers: a task is an id, its
// incoming edges, its limits and a weight; running one is the caller's Run,
// recording a state change the caller's Persist (and its variants), and
// what an edge reacts to is a Trigger the caller gives it.
//
// # Order
//
// A task starts only after all its predecessors have finished and their
// final states have been persisted (Persist, PersistBatch or Begin
// returned). Every final state is persisted after those of the task's
// predecessors, so the sequence of persisted final states is always a
// topological order of the graph: a crash can lose a task's result, never
// record a task as done before what it depends on. Everything else may run
// in parallel. Among tasks that are ready at the same moment the heaviest
// (Task.Weight) starts first, ties broken by id.
//
// # Truth table
//
// An edge's Trigger is its predicate on the final status of its
// predecessor: empty for an edge that only orders, the statuses on which
// it fires for a react edge. When all of a task's predecessors have
// finished:
//
//  1. If a predecessor ended ERROR, or SKIPPED because of an upstream
//     failure, and no edge whose Trigger holds ERROR (OnError) joins that
//     predecessor to the task, the task is SKIPPED "upstream failed:
//     <root>", naming the task that ended ERROR, however many skipped tasks
//     lie between. An edge that fires on ERROR exists to react to the
//     failure, so it lets it through.
//  2. A reactive task (Task.Reactive) runs when at least one incoming edge
//     fires: its Trigger holds the final status of its predecessor, or of
//     one of the predecessor's Earlier instances (a SKIPPED task fires
//     nothing). It runs once however many fire. Otherwise it is SKIPPED
//     "not triggered", which counts as finished: its own successors are
//     simply not triggered by it.
//  3. Any other task runs; its incoming edges only order it.
//
// A task that Walker.Begin ended NOOP without running it counts, for its
// successors, as any NOOP does: an edge whose Trigger holds NOOP fires.
//
// # Limits
//
// A task runs only within Walker.Concurrency and while it holds one unit
// of each of its limits (Task.Limits: a machine's slots, a resource's lock,
// a semaphore; all alike to the walker, which lets as many tasks hold one
// as the smallest count any task gives it). Limits cannot deadlock: only
// the scheduler goroutine takes and returns units, and it takes everything
// a task needs in one step, or nothing; a task that cannot get all of them
// now holds none while it waits, so no cycle of waiting tasks can form,
// whatever order tasks list their limits in (they are taken in kind and
// name order only for determinism). A waiting task is parked on the limit
// that refused it and the scheduler goes on to the next ready task, so a
// busy limit never holds back lighter tasks that could run (no
// head-of-line blocking). When a limit frees a unit, the heaviest task
// parked on it is reconsidered.
//
// # Batches
//
// Tasks that share a non-empty Task.Group may run together, as one batch,
// through one call of Walker.RunBatch (nil: never). When the scheduler
// starts a task of a group, it takes with it the other tasks of that
// group that are waiting to start at that moment, ready or parked on a
// limit, heaviest first, up to the smallest GroupMax of the members (0:
// no bound). A task joins only if each of its limits is one the batch
// holds already or has a free unit; one that cannot (its resource is busy)
// stays out and waits as usual. A group of one task, or an Inline task,
// never batches. The contract:
//
//   - Order is never changed. Only tasks ready at the same moment batch,
//     and a task with a path to another is never ready with it, so tasks
//     ordered by an edge are never in one batch.
//   - Limits: a batch holds the union of its members' limits, one unit of
//     each distinct limit (kind and name), taken all at once or not at
//     all, so batches keep the no-deadlock rule of limits. It counts as one
//     task against Concurrency.
//   - Each member begins as any task: Persist (or Begin) records it
//     INPROGRESS, and a member Begin ends SKIPPED or NOOP drops out. A
//     batch left with one member runs it through Run as a plain task.
//   - RunBatch is called once, on a goroutine of its own, with the members
//     heaviest first, and returns one Outcome per member in that order.
//     Each Outcome is completed as that task's own: its final state, the
//     truth table of its successors, its place in group commit, exactly as
//     if it had run alone.
//   - Failures: a panic in RunBatch fails every member (ErrTaskPanicked),
//     and so does a result of the wrong length, with an error saying so.
//   - Stop and cancel: a batch is one running unit. A soft stop lets it
//     finish; cancelling Walk's ctx cancels RunBatch's.
//
// # Durability
//
// Persist records every state change: INPROGRESS before Run is called
// (through Begin instead when set, which may also end the task there,
// SKIPPED or NOOP, without running it) and every final state (through
// PersistBatch instead when set, one call for all the tasks that finished
// while the scheduler was busy). These callbacks, Sync and Progress are
// called from one goroutine at a time, and a task's successors are
// released only after the call recording its final state returned. Sync
// is called before the scheduler waits and before it starts a task that
// depends on others, so the caller can make the last write durable before
// that task's work begins. A failing Persist (or PersistBatch, Begin)
// aborts the walk: running tasks are cancelled and waited for, and Walk
// returns the error.
//
// # Stop and cancel
//
// Closing Walk's stop channel stops a walk softly: no task starts any
// more, running tasks finish and are persisted, and every task that did not
// start ends SKIPPED "stopped". Cancelling ctx stops it hard: the same,
// except that running tasks' ctx is cancelled too, and they end with what
// Run reports. A panic in Run is the task's failure (ErrTaskPanicked), not
// the walk's.
//
// # Restore
//
// A walk resumed with recorded states (Walk's initial) never re-runs a
// finished task: it counts as finished with its recorded state, and its
// successors need not wait for it. Tasks recorded as INPROGRESS
// (interrupted) or PENDING run as if new.
//
// A task graph Walk refuses (a duplicate id, an edge from an unknown task,
// a cycle, a bad limit) is refused before anything runs or is persisted.
package walk
