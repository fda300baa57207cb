package orch

// Reasons orch records for a task it skips outside a walk, beside the
// walker's own (walk.ReasonStopped and the others).
const (
	ReasonFiltered   = "filtered"   // left out by orch filter
	ReasonSuperseded = "superseded" // its entries were taken over by a newer plan
	ReasonDiscarded  = "discarded"  // its staged entry was discarded
)
