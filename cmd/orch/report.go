package orch

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/solarops/solar/cmd/app"
	"github.com/solarops/solar/orch"
	"github.com/solarops/solar/store"
)

// ReportOptions are the inputs of "solar orch report".
type ReportOptions struct {
	App  *app.App
	Ref  string
	JSON bool
}

// NewCmdReport builds "solar orch report".
func NewCmdReport(a *app.App, runF func(*ReportOptions) error) *cobra.Command {
	opts := &ReportOptions{App: a}
	c := &cobra.Command{
		Use:   "report [UID|last]",
		Short: "Report a plan's tasks: status, duration, attempts, error or skip reason",
		Long:  "Show every task of the plan with its status, duration, attempts (of its last run; after a retry with their numbers over the plan's life, \"1 (#3)\", which solar orch logs --attempt takes; --json: who ran each), the runner that ran them (plans handed to the fleet by solar orch submit only; --json: \"runner\" of each attempt record, \"\" outside the fleet), whether a task is corrective (it ran because solar drift --stage staged it; a \"change\" column in plans with such a task only; --json: \"corrective\" of each task), the batch each attempt ran in (a \"batch\" column, \"b-ID of N\", in plans where some task ran in a batch; --json: \"batch\" and \"batch_members\" of each attempt record) and error or skip reason (or, for a running task that waits for a rate, \"waiting for rate NAME\"; --json: \"waiting\"), then totals by status and the wall time. After solar orch check, the prediction of the last check is shown beside each status. A stale plan (one run-once would refuse) says so at the top, naming each stale task and why (--json: \"stale\").\n" + app.ExitHelp,
		Example: `  solar orch report last
  solar orch report last --json | jq '.tasks[] | select(.status=="ERROR")'`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Ref = refArg(args)
			if runF != nil {
				return runF(opts)
			}
			return reportRun(opts)
		},
	}
	c.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return c
}

type reportTask struct {
	ID         string  `json:"id"`
	Status     string  `json:"status"`
	DurationMS float64 `json:"duration_ms"`
	Attempts   int     `json:"attempts"`
	Changed    bool    `json:"changed"`
	Error      string  `json:"error"`
	Reason     string  `json:"reason"`
	Start      string  `json:"start"`
	End        string  `json:"end"`
	// Predicted is what the last orch check predicted; "" if none.
	Predicted string `json:"predicted"`
	// AttemptNumbers are the numbers, over the plan's life, of the
	// Attempts attempts of the task's last run; AttemptRecords say who
	// ran each.
	AttemptNumbers []int         `json:"attempt_numbers"`
	AttemptRecords []attemptView `json:"attempt_records"`
	// Corrective is true for a task that ran because of drift (its entry
	// was staged by solar drift --stage), false for an intentional change.
	Corrective bool `json:"corrective"`
	// Waiting is what a running task waits for ("rate api"); "" if none.
	Waiting string `json:"waiting"`
}

type reportView struct {
	FormatVersion int            `json:"format_version"`
	UID           string         `json:"uid"`
	Finished      bool           `json:"finished"`
	Running       bool           `json:"running"`
	RunnerPID     int            `json:"runner_pid,omitempty"`
	WallMS        float64        `json:"wall_ms"`
	Totals        map[string]int `json:"totals"`
	Tasks         []reportTask   `json:"tasks"`
	// Stale lists the unfinished tasks that make the plan stale.
	Stale []staleView `json:"stale"`
	// ProcessedBy is who made the plan; "" for plans made before actors.
	ProcessedBy string `json:"processed_by"`
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func reportRun(opts *ReportOptions) error {
	var sum *orch.ReportSummary
	if err := opts.App.View(func(tx *store.Tx) error {
		var err error
		sum, err = orch.Report(tx, opts.Ref)
		return err
	}); err != nil {
		return err
	}
	v := newReportView(sum)
	if opts.JSON {
		return app.JSON(opts.App.IO.Out, v)
	}
	return printReport(opts.App, sum, v)
}

// newReportView is the --json view of sum.
func newReportView(sum *orch.ReportSummary) reportView {
	v := reportView{FormatVersion: app.FormatVersion, UID: sum.UID, Finished: sum.Finished, Running: sum.Running, RunnerPID: sum.RunnerPID,
		WallMS: millis(sum.Wall), Totals: make(map[string]int, len(sum.Totals)), Tasks: make([]reportTask, 0, len(sum.Tasks)), Stale: staleViews(sum.Stale), ProcessedBy: sum.ProcessedBy}
	for s, n := range sum.Totals {
		v.Totals[string(s)] = n
	}
	for _, t := range sum.Tasks {
		st := t.State
		v.Tasks = append(v.Tasks, reportTask{ID: t.ID, Status: string(st.Status), DurationMS: millis(t.Duration), Attempts: st.Attempts, Changed: st.Changed,
			Error: st.Err, Reason: st.Reason, Start: stamp(st.Start), End: stamp(st.End), Predicted: t.Predicted,
			AttemptNumbers: attemptNumbers(t.Attempts), AttemptRecords: attemptViews(t.Attempts), Corrective: t.Corrective, Waiting: t.Waiting})
	}
	return v
}

// millis is d in milliseconds, to the microsecond.
func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// printReport prints the human view of a report: the task table, the
// totals line, and where to read the logs of the tasks that failed.
func printReport(a *app.App, sum *orch.ReportSummary, v reportView) error {
	w := a.IO.Out
	printStale(w, v.UID, sum.Stale)
	fmt.Fprintf(w, "plan %s, processed by %s\n", v.UID, app.Escape(app.ActorOrDash(v.ProcessedBy)))
	// Only a plan the fleet ran has a runner column: outside the fleet
	// every attempt ran in the one process orch report's state line names.
	fleet := ranInFleet(v.Tasks)
	// Only a plan with a task that repairs drift has a change column, as
	// Puppet separates corrective from intentional changes.
	corrective := hasCorrective(v.Tasks)
	// Only a plan some of whose tasks ran in a batch has a batch column.
	batched := ranInBatch(v.Tasks)
	rows := make([][]string, 0, len(v.Tasks))
	for _, t := range v.Tasks {
		dur := ""
		if t.DurationMS > 0 || t.Start != "" && t.End != "" {
			dur = (time.Duration(t.DurationMS * float64(time.Millisecond))).Round(time.Millisecond).String()
		}
		note := t.Reason
		if t.Error != "" {
			note = clip(oneLine(t.Error), 120)
		}
		if t.Waiting != "" {
			note = "waiting for " + app.Escape(t.Waiting)
		}
		att := attemptsCell(t.Attempts, t.AttemptNumbers)
		status := app.Paint(t.Status, a.ColorOut())
		row := []string{t.ID, status, dur, att, note}
		if sum.Checked {
			row = []string{t.ID, t.Predicted, status, dur, att, note}
		}
		if fleet {
			row = append(row[:len(row)-1], app.Escape(runnersCell(t.AttemptRecords)), note)
		}
		if corrective {
			row = append(row[:len(row)-1], changeCell(t.Corrective), note)
		}
		if batched {
			row = append(row[:len(row)-1], batchCell(t.AttemptRecords), note)
		}
		rows = append(rows, row)
	}
	header := []string{"task", "status", "duration", "attempts", "error or reason"}
	if sum.Checked {
		// The last orch check's prediction beside what happened.
		header = []string{"task", "predicted", "status", "duration", "attempts", "error or reason"}
	}
	if fleet {
		header = append(header[:len(header)-1], "runner", "error or reason")
	}
	if corrective {
		header = append(header[:len(header)-1], "change", "error or reason")
	}
	if batched {
		header = append(header[:len(header)-1], "batch", "error or reason")
	}
	if err := app.Table(w, header, rows); err != nil {
		return err
	}
	var parts []string
	for _, s := range []orch.Status{orch.StatusSuccess, orch.StatusNoop, orch.StatusSkipped, orch.StatusError, orch.StatusPending, orch.StatusInProgress} {
		if n := v.Totals[string(s)]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, strings.ToLower(string(s))))
		}
	}
	state := "finished"
	if !v.Finished {
		state = "unfinished"
		switch {
		case v.Running:
			state += fmt.Sprintf(", running (pid %d)", v.RunnerPID)
		case v.Totals[string(orch.StatusInProgress)] > 0:
			state += ", interrupted: no runner is alive; solar orch resume " + v.UID + " finishes it"
		}
	}
	wall := "wall time " + time.Duration(v.WallMS*float64(time.Millisecond)).Round(time.Millisecond).String()
	if v.Running {
		wall = "running" // a wall time so far would read as the total
	}
	fmt.Fprintf(w, "\n%s: %s; %s; plan %s %s\n", app.Count(len(v.Tasks), "task"), strings.Join(parts, ", "), wall, v.UID, state)
	for _, t := range sum.Tasks {
		if t.State.Status == orch.StatusError && t.Logged {
			fmt.Fprintf(w, "what %s printed: solar orch logs %s %s\n", t.ID, v.UID, t.ID)
		}
	}
	return nil
}

// ranInFleet reports whether a fleet's runner ran any attempt of tasks.
func ranInFleet(tasks []reportTask) bool {
	for _, t := range tasks {
		for _, r := range t.AttemptRecords {
			if r.Runner != "" {
				return true
			}
		}
	}
	return false
}

// ranInBatch reports whether an attempt of tasks ran in a batch.
func ranInBatch(tasks []reportTask) bool {
	for _, t := range tasks {
		for _, r := range t.AttemptRecords {
			if r.Batch != "" {
				return true
			}
		}
	}
	return false
}

// batchCell is the batch column: the batch of each attempt of the task's
// last run, in order, with its size ("b-1a2b3c4d of 8"); "-" for an
// attempt that ran alone (a retry after its batch).
func batchCell(recs []attemptView) string {
	cells := make([]string, 0, len(recs))
	for _, r := range recs {
		if r.Batch == "" {
			cells = append(cells, "-")
			continue
		}
		cells = append(cells, fmt.Sprintf("%s of %d", r.Batch, len(r.BatchMembers)))
	}
	return strings.Join(cells, ", ")
}

// hasCorrective reports whether any of tasks ran because of drift.
func hasCorrective(tasks []reportTask) bool {
	for _, t := range tasks {
		if t.Corrective {
			return true
		}
	}
	return false
}

// changeCell is the change column: corrective for a task that repairs
// drift, "-" for any other (a change staged by hand, or a task the rules
// triggered).
func changeCell(corrective bool) string {
	if corrective {
		return "corrective"
	}
	return "-"
}

// runnersCell is the runner column: the runners of the attempts of the
// task's last run, each once, in the order they ran; "-" for attempts
// that ran outside the fleet.
func runnersCell(recs []attemptView) string {
	var names []string
	seen := map[string]bool{}
	for _, r := range recs {
		n := r.Runner
		if n == "" {
			n = "-"
		}
		if !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	return strings.Join(names, ", ")
}

func attemptNumbers(recs []orch.AttemptRecord) []int {
	out := make([]int, 0, len(recs))
	for _, r := range recs {
		out = append(out, r.Number)
	}
	return out
}

// attemptsCell is the attempts column: how many attempts the last run
// made and, when an earlier run made some too, their numbers over the
// plan's life ("1 (#3)", "2 (#3-4)"), the ones orch logs --attempt takes.
func attemptsCell(n int, numbers []int) string {
	if n == 0 {
		return ""
	}
	if len(numbers) == 0 || numbers[0] == 1 {
		return fmt.Sprint(n)
	}
	first, last := numbers[0], numbers[len(numbers)-1]
	if first == last {
		return fmt.Sprintf("%d (#%d)", n, first)
	}
	return fmt.Sprintf("%d (#%d-%d)", n, first, last)
}

// clip shortens s to about width characters by cutting out its middle: an
// error's start says what failed and where, its end the last words of the
// script or the fix to run. The whole text is in --json.
func clip(s string, width int) string {
	r := []rune(s)
	if len(r) <= width {
		return s
	}
	head := width / 2
	tail := width - head - 1
	return string(r[:head]) + "…" + string(r[len(r)-tail:])
}
