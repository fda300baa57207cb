package ch

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/solarops/solar/cmd/app"
	"github.com/solarops/solar/orch"
)

// printSuperseded says, for each older plan that plan uid took entries
// over from, which of its tasks were SKIPPED and that its finished ones
// kept their status: an operator reading the old plan's report later must
// not wonder where an ERROR went.
func printSuperseded(w io.Writer, uid string, plans []orch.SupersededPlan) {
	for _, p := range plans {
		fmt.Fprintf(w, "superseded plan %s: SKIPPED %q: %s not started", p.UID, orch.SupersededBy(uid), app.Count(len(p.Skipped), "task"))
		if kept := keptCounts(p.Kept); kept != "" {
			fmt.Fprintf(w, "; kept as they were: %s", kept)
		}
		fmt.Fprintln(w)
	}
}

// keptCounts renders counts by status as "1 ERROR, 2 SUCCESS", in status
// order so that the line is the same on every run.
func keptCounts(kept map[orch.Status]int) string {
	statuses := make([]string, 0, len(kept))
	for s := range kept {
		statuses = append(statuses, string(s))
	}
	sort.Strings(statuses)
	parts := make([]string, len(statuses))
	for i, s := range statuses {
		parts[i] = fmt.Sprintf("%d %s", kept[orch.Status(s)], s)
	}
	return strings.Join(parts, ", ")
}
