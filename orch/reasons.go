package orch

// Reasons orch records for a task it skips outside a walk, beside the
// walker's own (walk.ReasonStopped and the others).
const (
	ReasonFiltered   = "filtered"   // left out by orch filter
	ReasonSuperseded = "superseded" // its entries were taken over by a newer plan (see SupersededBy)
	ReasonDiscarded  = "discarded"  // its staged entry was discarded
)

// SupersededBy is the reason of a task not started whose entry the plan uid
// took over: ReasonSuperseded and the plan that will run it instead, so
// that a report of the old plan says where its work went.
func SupersededBy(uid string) string { return ReasonSuperseded + " by " + uid }
