package orch

import (
	"fmt"
	"io"

	"github.com/solarops/solar/cmd/app"
	"github.com/solarops/solar/orch"
)

// staleView is one stale task in --json.
type staleView struct {
	Task string `json:"task"`
	Why  string `json:"why"`
}

// staleViews is the --json form of stale; never nil.
func staleViews(stale []orch.StaleTask) []staleView {
	out := make([]staleView, 0, len(stale))
	for _, s := range stale {
		out = append(out, staleView{Task: s.ID, Why: s.Why})
	}
	return out
}

// staleShown is how many stale tasks the mark names; --json has them all.
const staleShown = 10

// printStale writes the mark of a stale plan, meant for the top of what a
// command prints: one line per stale task with why (the first staleShown),
// how many more, and what to do. It writes nothing for a fresh plan.
func printStale(w io.Writer, uid string, stale []orch.StaleTask) {
	if len(stale) == 0 {
		return
	}
	for _, s := range stale[:min(len(stale), staleShown)] {
		fmt.Fprintf(w, "plan %s is stale: %s (%s)\n", uid, s.ID, app.Escape(s.Why))
	}
	if more := len(stale) - staleShown; more > 0 {
		fmt.Fprintf(w, "plan %s is stale: and %d more (--json lists them all)\n", uid, more)
	}
	fmt.Fprintf(w, "run-once refuses a stale plan: solar ch process --supersede makes a new plan of what is staged now, replacing this plan's tasks not started\n\n")
}
