// Package staging owns the staged log (the StagedResources bucket), the
// committed state of every resource, and the history of committed changes.
//
// The log holds one Entry per (resource, action), keyed "<resource>.<action>",
// with the resource's tags copied in at staging time, a sequence number that
// gives the staging order, and the diff against the last committed state.
// Restaging the same key updates the entry in place and keeps its place in
// the order.
//
// Implicit staging follows the resource's life: a never-committed resource
// stages run, a committed one update, a removal remove. Resources whose
// effective inputs change because of an upstream change get their own entry
// ("affected children"), without tags but remembering which resources caused
// them, so that selecting the cause by tag selects them too.
//
// Commit is called by the executor when a task succeeds, inside the same
// transaction that records the task's status: the entry moves to history and
// the committed state follows. Nothing else ever removes a staged entry but
// an explicit discard.
package staging
