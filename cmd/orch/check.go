package orch

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/solarops/solar/cmd/app"
	"github.com/solarops/solar/orch"
	"github.com/solarops/solar/store"
)

// CheckOptions are the inputs of "solar orch check".
type CheckOptions struct {
	App         *app.App
	Ref         string
	Concurrency int
	PerNode     int
	JSON        bool
}

// NewCmdCheck builds "solar orch check".
func NewCmdCheck(a *app.App, runF func(*CheckOptions) error) *cobra.Command {
	opts := &CheckOptions{App: a}
	c := &cobra.Command{
		Use:   "check [UID|last]",
		Short: "Dry run: predict what each task of a plan would change and trigger",
		Long: `Walk the plan as run-once would, changing nothing. A task whose base lists its
action under "check:" in meta.yaml runs its script with SOLAR_CHECK=1: the
script changes nothing and reports whether it would change something. A task
without check support is UNKNOWN and counts as changed for what it triggers;
a noop task would not change. The event rules then apply to the predictions, so
each task triggered by rules is predicted to run (naming the rule that fires)
or not to run.

Nothing is committed, no staged entry changes, and the plan stays runnable; the
predictions are kept, and orch report shows them beside the real outcomes.
Limits, timeouts and Ctrl-C work as for run-once. Exit status 3 when a check
script failed. A stale plan (a task not yet finished whose resource changed
since the plan was made, which run-once refuses) is refused with exit status 2,
naming each stale task and why, and nothing runs.` + "\n" + app.ExitHelp,
		Example: `  solar orch check last
  solar orch check last --json | jq '.predictions[] | select(.prediction == "would change")'
  solar orch check last && solar orch run-once last`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Ref = refArg(args)
			if opts.Concurrency < 1 || opts.PerNode < 1 {
				return app.Usagef("--concurrency and --per-node must be at least 1")
			}
			if runF != nil {
				return runF(opts)
			}
			return checkRun(opts)
		},
	}
	c.Flags().IntVar(&opts.Concurrency, "concurrency", 10, "at most N tasks at once")
	c.Flags().IntVar(&opts.PerNode, "per-node", 1, "at most N tasks at once on one location node")
	c.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return c
}

// predictionOrder is the order of the summary.
var predictionOrder = []string{orch.WouldChange, orch.WouldNotChange, orch.Unknown, orch.WouldNotRun, orch.CheckFailed}

func checkRun(opts *CheckOptions) error {
	a := opts.App
	settings, err := a.RunSettings()
	if err != nil {
		return err
	}
	var uid string
	if err := a.View(func(tx *store.Tx) error {
		uid, err = orch.Resolve(tx, opts.Ref)
		return err
	}); err != nil {
		return err
	}
	path, err := a.StorePath()
	if err != nil {
		return err
	}
	pr := newProgress(a.IO.Err, false, false, a.Now())
	in := interrupts(pr)
	defer in.release()
	r := &settings
	r.Store, r.UID, r.Concurrency, r.PerNode = store.NewHandle(path), uid, opts.Concurrency, opts.PerNode
	r.Started = func(*orch.Record, map[string]orch.State) {
		fmt.Fprintf(a.IO.Err, "check plan %s (nothing will be changed)\n", uid)
	}
	_, preds, err := r.Check(in.ctx, in.stop)
	pr.end()
	if err != nil {
		return err
	}
	if in.typed() {
		fmt.Fprintf(a.IO.Err, "interrupted; the check of plan %s is incomplete (nothing was changed)\n", uid)
		return &app.InterruptedError{}
	}
	totals := map[string]int{}
	for _, p := range preds {
		totals[p.What]++
	}
	if opts.JSON {
		if err := app.JSON(a.IO.Out, struct {
			FormatVersion int               `json:"format_version"`
			UID           string            `json:"uid"`
			Totals        map[string]int    `json:"totals"`
			Predictions   []orch.Prediction `json:"predictions"`
		}{app.FormatVersion, uid, totals, preds}); err != nil {
			return err
		}
	} else {
		rows := make([][]string, 0, len(preds))
		for _, p := range preds {
			rows = append(rows, []string{p.Task, p.What, p.Why})
		}
		if err := app.Table(a.IO.Out, []string{"task", "prediction", "why"}, rows); err != nil {
			return err
		}
		var parts []string
		for _, w := range predictionOrder {
			if n := totals[w]; n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", n, w))
			}
		}
		fmt.Fprintf(a.IO.Out, "\nplan %s: %s; nothing was changed\n", uid, strings.Join(parts, ", "))
		if totals[orch.Unknown] > 0 {
			fmt.Fprintln(a.IO.Out, "unknown: the base has no check support for that action (check: in meta.yaml); counted as changed for the rules it triggers")
		}
	}
	if n := totals[orch.CheckFailed]; n > 0 {
		return &app.FailedError{Msg: app.Count(n, "check") + " failed"}
	}
	return nil
}
