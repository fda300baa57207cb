// Package staging owns the staged log (the StagedResources bucket), the
// committed state of every resource, and the history of committed changes.
//
// The log holds one Entry per (resource, action), keyed "<resource>.<action>",
// with the resource's tags copied in at staging time, a sequence number that
// gives the staging order, and the diff against the last committed state.
// Restaging the same key updates the entry in place and keeps its place in
// the order. A tag index (StagedTags) lets a tag selection read only the
// entries it needs; it always matches the entries' copied tags.
//
// Implicit staging follows the resource's life: a never-committed resource
// stages run, a committed one update, a removal remove. Resources whose
// effective inputs change because of an upstream change get their own entry
// ("affected children"), without tags but naming the resources whose change
// reached them, so that selecting the cause by tag selects them too. An
// update whose diff goes back to empty leaves the log: nothing is left to
// do. Entries staged for the action itself (by hand, or pending refreshes)
// are Explicit and stay until committed or discarded.
//
// Commit is called by the executor when a task succeeds, inside the same
// transaction that records the task's status: the entry moves to history and
// the committed state follows; whatever changed while the task ran is staged
// afresh, so nothing is forgotten. Discard undoes a staged change, Revert
// stages the inverse of a committed one. A resource that leaves the store
// (its remove committed, or its first run discarded) takes its rules,
// connections and the host key trusted for it (package nodes' record) with
// it; reverting the removal brings the node back untrusted.
//
// Upgrade stages what a new base changed (files as Change.File lines, the
// base itself under BaseKey, then the inputs): the file lines are against the
// committed state and stay with the entry while other changes restage it;
// discarding or reverting an upgrade puts the old base back from the store.
//
// Who acts: a Stager's Actor (set by whoever makes it, Stager.By) is
// recorded as the StagedBy of every entry it stages, the last writer's, and
// with Host as the RanBy and RanOn of every history entry it commits, which
// also keeps the entry's StagedBy. Records written before actors have none.
//
// A Stager works inside its caller's transaction and buffers its writes to
// the log until each of its methods returns, to write them in key order:
// bbolt is slow at many unordered inserts in one transaction.
package staging
