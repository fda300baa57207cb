package ch

import (
	"fmt"
	"sort"
	"strings"

	"github.com/solarops/solar/cmd/app"
)

// othersShown is how many keys a note about entries staged by someone
// else names before it says how many more there are.
const othersShown = 5

// othersNotes says, one line per other actor, which of the entries a plan
// took were staged by someone other than me, since a second operator's
// "ch process" takes the first one's unfinished edits too:
//
//	note: 3 entries staged by alice@laptop (a.update, b.run, c.run)
//
// Entries staged before actors (no staged_by) are counted under "-".
func othersNotes(byActor map[string][]string, me string) []string {
	var who []string
	for a := range byActor {
		if a != me {
			who = append(who, a)
		}
	}
	sort.Strings(who)
	out := make([]string, 0, len(who))
	for _, a := range who {
		keys := byActor[a]
		list := keys
		more := ""
		if len(list) > othersShown {
			list, more = list[:othersShown], fmt.Sprintf(", %d more", len(keys)-othersShown)
		}
		out = append(out, fmt.Sprintf("note: %s staged by %s (%s%s)",
			app.Count(len(keys), "entry"), app.Escape(app.ActorOrDash(a)), app.Escape(strings.Join(list, ", ")), more))
	}
	return out
}
