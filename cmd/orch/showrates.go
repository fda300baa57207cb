package orch

import (
	"fmt"
	"io"
	"strings"

	"github.com/solarops/solar/cmd/app"
	"github.com/solarops/solar/orch"
)

// rateView is one rate a plan's tasks take from, in orch show --json.
type rateView struct {
	// Name is the rate's name, or "limit of RESOURCE" for a resource's
	// own limit.
	Name string `json:"name"`
	// Rate is COUNT/UNIT ("10/s"); Burst the starts it lets through at
	// once. They are the strictest the plan's tasks give.
	Rate  string   `json:"rate"`
	Burst int      `json:"burst"`
	Tasks []string `json:"tasks"`
}

func rateViews(rates []orch.PlanRate) []rateView {
	out := make([]rateView, 0, len(rates))
	for _, r := range rates {
		out = append(out, rateView{Name: r.Name, Rate: r.Rate.PerUnit(), Burst: r.Rate.Burst, Tasks: append([]string{}, r.Tasks...)})
	}
	return out
}

// maxRateTasks is how many of a rate's tasks the human view names.
const maxRateTasks = 5

// printRates prints the rates of a plan, if it has any:
// "rate api: 10/s, burst 1, 30 tasks (r1.run#0, r2.run#0, ...)".
func printRates(w io.Writer, rates []rateView) {
	if len(rates) == 0 {
		return
	}
	fmt.Fprintln(w, "rates:")
	for _, r := range rates {
		names := r.Tasks
		more := ""
		if len(names) > maxRateTasks {
			names, more = names[:maxRateTasks], ", ..."
		}
		what := "rate " + r.Name
		if strings.HasPrefix(r.Name, "limit of ") {
			what = r.Name
		}
		fmt.Fprintf(w, "  %s: %s, burst %d, %s (%s%s)\n", app.Escape(what), r.Rate, r.Burst, app.Count(len(r.Tasks), "task"), app.Escape(strings.Join(names, ", ")), more)
	}
	fmt.Fprintln(w)
}
