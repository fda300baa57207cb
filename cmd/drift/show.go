package drift

import (
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/solarops/solar/cmd/app"
	"github.com/solarops/solar/orch"
	"github.com/solarops/solar/store"
)

// runJSON is a drift run in --json: the run as kept, versioned, its lists
// never null.
type runJSON struct {
	FormatVersion int `json:"format_version"`
	orch.DriftRun
}

func toJSON(d *orch.DriftRun) runJSON {
	out := runJSON{FormatVersion: app.FormatVersion, DriftRun: *d}
	if out.Results == nil {
		out.Results = []orch.DriftResult{}
	}
	if out.Staged == nil {
		out.Staged = []string{}
	}
	return out
}

// render prints d: a table and a summary line, or JSON.
func render(a *app.App, d *orch.DriftRun, asJSON bool) error {
	if asJSON {
		return app.JSON(a.IO.Out, toJSON(d))
	}
	rows := make([][]string, 0, len(d.Results))
	for _, r := range d.Results {
		what := r.Detail
		if len(r.Changes) > 0 {
			what = strings.Join(r.Changes, ", ") + ": " + what
		}
		if len(r.Ignored) > 0 {
			what += " (ignored: " + strings.Join(r.Ignored, ", ") + ")"
		}
		action := r.Action
		if action == "" {
			action = "-"
		}
		rows = append(rows, []string{r.Resource, action, r.Status, strings.TrimSpace(what)})
	}
	if len(rows) > 0 {
		if err := app.Table(a.IO.Out, []string{"RESOURCE", "CHECKED", "STATUS", "WHAT THE CHECK SAID"}, rows); err != nil {
			return err
		}
	}
	_, err := a.IO.Out.Write([]byte("\n" + summary(d) + "\n"))
	return err
}

// ListOptions are drift list's flags.
type ListOptions struct {
	App  *app.App
	JSON bool
}

func newCmdList(a *app.App) *cobra.Command {
	opts := &ListOptions{App: a}
	c := &cobra.Command{
		Use:   "list",
		Short: "List the kept drift runs",
		Long:  "List every drift run kept in the store, oldest first: its id, who ran it and when, its selection and its counts." + "\n" + app.ExitHelp,
		Example: `  solar drift list
  solar drift list --json`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			var runs []*orch.DriftRun
			if err := a.View(func(tx *store.Tx) error {
				var err error
				runs, err = orch.DriftRuns(tx)
				return err
			}); err != nil {
				return err
			}
			if opts.JSON {
				out := struct {
					FormatVersion int       `json:"format_version"`
					Runs          []runJSON `json:"runs"`
				}{FormatVersion: app.FormatVersion, Runs: []runJSON{}}
				for _, d := range runs {
					out.Runs = append(out.Runs, toJSON(d))
				}
				return app.JSON(a.IO.Out, out)
			}
			rows := make([][]string, 0, len(runs))
			for _, d := range runs {
				rows = append(rows, []string{d.ID, d.By, d.Started.Local().Format(time.DateTime), d.Selection,
					strconv.Itoa(d.Count(orch.DriftInSync)), strconv.Itoa(d.Count(orch.DriftDrifted)),
					strconv.Itoa(d.Count(orch.DriftCannot)), strconv.Itoa(d.Count(orch.DriftError)), strconv.Itoa(len(d.Staged))})
			}
			if len(rows) == 0 {
				_, err := a.IO.Err.Write([]byte("no drift runs yet (run solar drift)\n"))
				return err
			}
			return app.Table(a.IO.Out, []string{"ID", "BY", "STARTED", "SELECTION", "IN SYNC", "DRIFTED", "CANNOT CHECK", "ERRORS", "STAGED"}, rows)
		},
	}
	c.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return c
}

func newCmdShow(a *app.App) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "show ID|last",
		Short: "Show one kept drift run",
		Long:  "Show what a kept drift run found for each resource (last: the latest run)." + "\n" + app.ExitHelp,
		Example: `  solar drift show last
  solar drift show 20261127-101500-0042 --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			var d *orch.DriftRun
			if err := a.View(func(tx *store.Tx) error {
				var err error
				d, err = orch.GetDriftRun(tx, args[0])
				return err
			}); err != nil {
				return err
			}
			return render(a, d, asJSON)
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}
