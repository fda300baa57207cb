package orch

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/solarops/solar/cmd/app"
	"github.com/solarops/solar/orch"
	"github.com/solarops/solar/store"
)

// ShowOptions are the inputs of "solar orch show".
type ShowOptions struct {
	App  *app.App
	Ref  string
	JSON bool
	// Values adds, per task, its base and every input value it was
	// planned with.
	Values bool
}

// NewCmdShow builds "solar orch show".
func NewCmdShow(a *app.App, runF func(*ShowOptions) error) *cobra.Command {
	opts := &ShowOptions{App: a}
	c := &cobra.Command{
		Use:   "show [UID|last]",
		Short: "Show a plan: tasks, why each is there, what each changes, edges",
		Long: `Show what the plan was reviewed with, never today's values: each task, in
the order of orch report, with its status, critical-path weight and reason
(its staged entry, or the rules that trigger it); then what each staged task
changes (its entry's + ~ - lines as recorded when the plan was made, secrets
masked; "committed" once the task ran); then the rates its tasks take from
(meta rate, and a resource's limit and burst: the numbers the run uses, the
strictest its tasks give, and which tasks; --json: "rates"); then every edge. A value an earlier
task of the plan sends is shown "(known after TASK runs)".

A stale plan (one run-once would refuse: a task not yet finished whose
resource changed since the plan was made) says so at the top, naming each
stale task and why. A task that may run in one batch with others (its base
has a batch script for its action, docs/bases.md) shows its batch group:
tasks of one group ready at the same moment run together.

--values adds, per task, its base (name, version, digest) and every input
value it will run with, and the transport inputs of its node. --json is the
whole reviewed artifact: per task its base, planned inputs (sensitive ones
masked), sensitive input names, values known only later, node, why it is
there, the tasks it runs after and before, its batch group ("batch_group",
"" for none) and its diff; "stale" lists the
stale tasks. A plan made before values were pinned has "pinned": false and
shows its staged entries' diffs as they are now.` + "\n" + app.ExitHelp,
		Example: `  solar orch show last
  solar orch show last --values
  solar orch show last --json | jq '.tasks[] | select(.staged)'
  solar orch show last --json | jq '.tasks[] | {id, base: .base.digest, inputs}'
  solar orch show last --json | jq '.rates[] | {name, rate, burst}'`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Ref = refArg(args)
			if runF != nil {
				return runF(opts)
			}
			return showRun(opts)
		},
	}
	c.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	c.Flags().BoolVar(&opts.Values, "values", false, "also show each task's base and every value it was planned with")
	return c
}

type taskView struct {
	ID          string   `json:"id"`
	Resource    string   `json:"resource"`
	Action      string   `json:"action"`
	Instance    int      `json:"instance"`
	Status      string   `json:"status"`
	Staged      bool     `json:"staged"`
	StagedKey   string   `json:"staged_key"`
	TriggeredBy []string `json:"triggered_by"`
	Weight      int      `json:"weight"`
	// DiffSource is "committed", "staged" or "" (see orch.TaskDiff).
	DiffSource string           `json:"diff_source"`
	Diff       []app.ChangeView `json:"diff"`
	// What the task was reviewed with (its pin); zero values in a plan
	// made before pins (planView.Pinned false).
	Base      baseView          `json:"base"`
	Inputs    map[string]any    `json:"inputs"`
	Sensitive []string          `json:"sensitive"`
	Later     map[string]string `json:"later"`
	Location  string            `json:"location"`
	Node      map[string]any    `json:"node"`
	// Why is the human "why" column: "staged KEY" or "triggered by RULE; ...".
	Why    string   `json:"why"`
	After  []string `json:"after"`
	Before []string `json:"before"`
	// BatchGroup names the tasks this one may run in one batch with
	// (those of one base digest, action and node); "" when it runs alone.
	BatchGroup string `json:"batch_group"`
}

type baseView struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Digest  string `json:"digest"`
}

type edgeView struct {
	From  string `json:"from"`
	To    string `json:"to"`
	Kind  string `json:"kind"`
	Event string `json:"event"`
	Rule  string `json:"rule"`
}

type planView struct {
	FormatVersion int        `json:"format_version"`
	UID           string     `json:"uid"`
	CreatedAt     string     `json:"created_at"`
	Selection     []string   `json:"selection"`
	Tasks         []taskView `json:"tasks"`
	Edges         []edgeView `json:"edges"`
	Warnings      []string   `json:"warnings"`
	// Stale lists the unfinished tasks that make the plan stale.
	Stale []staleView `json:"stale"`
	// Pinned is false for a plan made before tasks were pinned: its tasks
	// have no base, inputs or node, and their diffs are the staged log's.
	Pinned bool `json:"pinned"`
	// Rates are the rates the tasks take from (showrates.go).
	Rates []rateView `json:"rates"`
}

func showRun(opts *ShowOptions) error {
	var sum *orch.ShowSummary
	if err := opts.App.View(func(tx *store.Tx) error {
		var err error
		sum, err = orch.Show(tx, opts.Ref)
		return err
	}); err != nil {
		return err
	}
	v := newPlanView(sum)
	if opts.JSON {
		return app.JSON(opts.App.IO.Out, v)
	}
	return printPlan(opts, sum, v)
}

// printPlan prints the human view of a plan: the stale mark, the tasks,
// what each staged task changes, each task's values with --values, then
// the edges and the planner's warnings.
func printPlan(opts *ShowOptions, sum *orch.ShowSummary, v planView) error {
	w := opts.App.IO.Out
	printStale(w, v.UID, sum.Stale)
	fmt.Fprintf(w, "plan %s (created %s, selection: %s)\n\n", v.UID, v.CreatedAt, selection(v.Selection))
	if err := printTasks(opts, v); err != nil {
		return err
	}
	fmt.Fprintln(w)
	// What each staged task changes, in the same order; a reviewer reads
	// this as Terraform's plan output.
	changed := false
	for _, t := range v.Tasks {
		if len(t.Diff) == 0 {
			continue
		}
		if !changed {
			fmt.Fprintln(w, "changes:")
			changed = true
		}
		note := ""
		if t.DiffSource == "committed" {
			note = " (committed)"
		}
		fmt.Fprintf(w, "  %s%s\n", t.ID, note)
		for _, c := range t.Diff {
			fmt.Fprintf(w, "    %s\n", app.Escape(c.Text))
		}
		if t.DiffSource != "committed" {
			printLater(w, t)
		}
	}
	if changed {
		fmt.Fprintln(w)
	}
	printRates(w, v.Rates)
	if opts.Values {
		printValues(w, sum)
	}
	erows := make([][]string, 0, len(v.Edges))
	for _, e := range v.Edges {
		label := e.Event
		if e.Kind == "after" {
			label = "after"
		}
		erows = append(erows, []string{e.From, "-> " + e.To, label})
	}
	if err := app.Table(w, []string{"from", "to", "on"}, erows); err != nil {
		return err
	}
	for _, warn := range v.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warn)
	}
	return nil
}

// printTasks prints the task table of a plan; a batch column only when
// some task may run in a batch.
func printTasks(opts *ShowOptions, v planView) error {
	batched := slices.ContainsFunc(v.Tasks, func(t taskView) bool { return t.BatchGroup != "" })
	rows := make([][]string, 0, len(v.Tasks))
	for _, t := range v.Tasks {
		row := []string{t.ID, app.Paint(t.Status, opts.App.ColorOut()), fmt.Sprint(t.Weight), t.Why}
		if batched {
			row = append(row[:3], cmp.Or(t.BatchGroup, "-"), t.Why)
		}
		rows = append(rows, row)
	}
	header := []string{"task", "status", "weight", "why"}
	if batched {
		header = []string{"task", "status", "weight", "batch group", "why"}
	}
	return app.Table(opts.App.IO.Out, header, rows)
}

func selection(s []string) string {
	if len(s) == 0 {
		return "all staged entries"
	}
	return "-t " + strings.Join(s, " -t ")
}

// ListOptions are the inputs of "solar orch list".
type ListOptions struct {
	App  *app.App
	JSON bool
}

// NewCmdList builds "solar orch list".
func NewCmdList(a *app.App, runF func(*ListOptions) error) *cobra.Command {
	opts := &ListOptions{App: a}
	c := &cobra.Command{
		Use:     "list",
		Short:   "List plans, newest last, with their task counts by status",
		Long:    "List every plan uid with its size, selection and whether it still has unfinished tasks.\n" + app.ExitHelp,
		Example: "  solar orch list\n  solar orch list --json",
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return listRun(opts)
		},
	}
	c.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return c
}

type planSummary struct {
	UID       string         `json:"uid"`
	CreatedAt string         `json:"created_at"`
	Selection []string       `json:"selection"`
	Tasks     int            `json:"tasks"`
	Open      bool           `json:"open"`
	Counts    map[string]int `json:"counts"`
	// ProcessedBy is who made the plan; "" for plans made before actors.
	ProcessedBy string `json:"processed_by"`
}

func listRun(opts *ListOptions) error {
	out := struct {
		FormatVersion int           `json:"format_version"`
		Plans         []planSummary `json:"plans"`
	}{FormatVersion: app.FormatVersion, Plans: []planSummary{}}
	err := opts.App.View(func(tx *store.Tx) error {
		uids, err := orch.UIDs(tx)
		if err != nil {
			return err
		}
		for _, uid := range uids {
			rec, err := orch.Load(tx, uid)
			if err != nil {
				return err
			}
			states, err := orch.States(tx, rec)
			if err != nil {
				return err
			}
			s := planSummary{UID: uid, CreatedAt: rec.CreatedAt.Format("2006-01-02T15:04:05Z"), Selection: rec.Selection, Tasks: len(rec.Plan.Nodes), Open: orch.Open(tx, uid), Counts: map[string]int{}, ProcessedBy: rec.ProcessedBy}
			if s.Selection == nil {
				s.Selection = []string{}
			}
			for _, st := range states {
				s.Counts[string(st.Status)]++
			}
			out.Plans = append(out.Plans, s)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if opts.JSON {
		return app.JSON(opts.App.IO.Out, out)
	}
	if len(out.Plans) == 0 {
		_, err := fmt.Fprintln(opts.App.IO.Out, "no plans yet; build one with solar ch process")
		return err
	}
	rows := make([][]string, 0, len(out.Plans))
	for _, p := range out.Plans {
		state := "finished"
		if p.Open {
			state = "unfinished"
		}
		var counts []string
		for _, s := range []orch.Status{orch.StatusPending, orch.StatusInProgress, orch.StatusSuccess, orch.StatusNoop, orch.StatusSkipped, orch.StatusError} {
			if n := p.Counts[string(s)]; n > 0 {
				counts = append(counts, fmt.Sprintf("%s=%d", strings.ToLower(string(s)), n))
			}
		}
		rows = append(rows, []string{p.UID, fmt.Sprint(p.Tasks), state, strings.Join(counts, " "), app.ActorOrDash(p.ProcessedBy), selection(p.Selection)})
	}
	return app.Table(opts.App.IO.Out, []string{"uid", "tasks", "state", "counts", "processed by", "selection"}, rows)
}
