package orch

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/solarops/solar/cmd/app"
	"github.com/solarops/solar/orch"
	"github.com/solarops/solar/planner"
	"github.com/solarops/solar/store"
)

// DGOptions are the inputs of "solar orch dg".
type DGOptions struct {
	App    *app.App
	Ref    string
	Format string
	// Reduce draws the transitive reduction (planner.Reduce); the stored
	// plan is never changed.
	Reduce bool
}

// NewCmdDG builds "solar orch dg".
func NewCmdDG(a *app.App, runF func(*DGOptions) error) *cobra.Command {
	opts := &DGOptions{App: a}
	c := &cobra.Command{
		Use:   "dg [UID|last]",
		Short: "Draw a plan's action graph (DOT or Mermaid), colored by task status",
		Long: `Print the plan's graph. Nodes are action instances colored by status (pending,
running, success, noop, skipped, error); edges are labelled with their event,
and dependency (after) edges are dashed. A stale plan (one run-once would
refuse) is marked on stderr, naming each stale task and why, so that stdout
stays a graph to pipe.

--reduce draws the transitive reduction: a dependency (after) edge is left
out when a longer path already orders its two tasks. Only plain ordering
edges are reduced; an event (react) edge is always drawn, since its event
says what triggers the task. The reduction is computed for the drawing
only: the stored plan, and what runs, keep every edge.` + "\n" + app.ExitHelp,
		Example: `  solar orch dg last | dot -Tsvg > plan.svg
  solar orch dg last --format mermaid
  solar orch dg last --reduce | dot -Tsvg > plan-reduced.svg`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Ref = refArg(args)
			if opts.Format != "dot" && opts.Format != "mermaid" {
				return app.Usagef("--format %q: want dot or mermaid", opts.Format)
			}
			if runF != nil {
				return runF(opts)
			}
			return dgRun(opts)
		},
	}
	c.Flags().StringVar(&opts.Format, "format", "dot", "dot or mermaid")
	c.Flags().BoolVar(&opts.Reduce, "reduce", false, "leave out after-edges a longer path implies (drawing only)")
	return c
}

func dgRun(opts *DGOptions) error {
	var sum *orch.GraphSummary
	if err := opts.App.View(func(tx *store.Tx) error {
		var err error
		sum, err = orch.Graph(tx, opts.Ref)
		return err
	}); err != nil {
		return err
	}
	// The mark goes to stderr: stdout stays a graph dot and mermaid read.
	printStale(opts.App.IO.Err, sum.Record.UID, sum.Stale)
	rec, states := sum.Record, sum.States
	status := func(id string) string { return string(states[id].Status) }
	plan := rec.Plan
	if opts.Reduce {
		plan = planner.Reduce(plan)
	}
	out := planner.DOT(plan, status)
	if opts.Format == "mermaid" {
		out = planner.Mermaid(plan, status)
	}
	_, err := fmt.Fprint(opts.App.IO.Out, out)
	return err
}
