package resource

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/solarops/solar/cmd/app"
	orchcmd "github.com/solarops/solar/cmd/orch"
	"github.com/solarops/solar/orch"
	"github.com/solarops/solar/store"
)

// ActionOptions are the inputs of "solar resource action".
type ActionOptions struct {
	App      *app.App
	Resource string
	Action   string
	DryRun   bool
	JSON     bool // --dry-run only
	Verbose  bool
}

// NewCmdAction builds "solar resource action".
func NewCmdAction(a *app.App, runF func(*ActionOptions) error) *cobra.Command {
	opts := &ActionOptions{App: a}
	c := &cobra.Command{
		Use:   "action NAME ACTION",
		Short: "Run one action of a resource now, as a one-task plan",
		Long: `Run resource NAME's ACTION now (any action its base defines: run, update,
restart...). It is not a side door: a plan of that one task is made and stored,
its uid printed on stdout first (as ch process does), and it runs as
"orch run-once" runs a plan, with the same locks, node, logs, progress on
stderr, -v, Ctrl-C and, on a PostgreSQL store, the same claim and lease. orch
list and orch report show it like any plan. No event rule is consulted: the
plan is that task alone.

The task runs with the resource's current values. When NAME.ACTION is staged,
the task is that entry's and its success commits it (history gets the line);
with nothing staged it commits nothing, as any run of an action with no entry.
An entry pending in an unfinished plan is refused: run that plan instead.

--dry-run makes no plan and changes nothing: it runs the action's check, as
"orch check" does for a task (the script with SOLAR_CHECK=1 when the base lists
the action under "check:"), and prints the prediction: would change, would not
change, or unknown (no check support). Its exit status is orch check's: 3 when
the check script failed.

An unknown resource or action (the error lists the base's actions) or extra
arguments exit 2 with nothing written. Exit status 3 when the action ended
ERROR, 5 when the run was stopped (solar orch stop), 130 on Ctrl-C.` + "\n" + app.ExitHelp,
		Example: `  solar resource action web1 restart
  solar resource action web1 run -v
  solar resource action web1 update --dry-run
  uid=$(solar resource action db1 backup) || solar orch report "$uid"`,
		Args: cobra.ExactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Resource, opts.Action = args[0], args[1]
			if opts.JSON && !opts.DryRun {
				return app.Usagef("--json needs --dry-run (a run's outcome is in solar orch report UID --json)")
			}
			if runF != nil {
				return runF(opts)
			}
			return actionRun(opts)
		},
	}
	c.Flags().BoolVar(&opts.DryRun, "dry-run", false, "run the action's check and print the prediction; change nothing")
	c.Flags().BoolVar(&opts.JSON, "json", false, "with --dry-run: print the prediction as JSON")
	c.Flags().BoolVarP(&opts.Verbose, "verbose", "v", false, "stream the task's output to stderr, each line prefixed with the task")
	return c
}

func actionRun(opts *ActionOptions) error {
	a := opts.App
	if opts.DryRun {
		return orchcmd.CheckAction(&orchcmd.ActionCheckOptions{App: a, Resource: opts.Resource, Action: opts.Action, JSON: opts.JSON})
	}
	var rec *orch.Record
	err := a.Update(func(tx *store.Tx) error {
		var err error
		rec, err = orch.ActionPlan(tx, opts.Resource, opts.Action, a.Now(), a.Actor())
		return err
	})
	if err != nil {
		return err
	}
	n := rec.Plan.Nodes[0]
	what := "nothing staged for it"
	if n.StagedKey != "" {
		what = "its success commits the staged " + n.StagedKey
	}
	fmt.Fprintf(a.IO.Err, "plan %s: 1 task, %s (%s)\n", rec.UID, n.ID, what)
	if _, err := fmt.Fprintln(a.IO.Out, rec.UID); err != nil {
		return err
	}
	return orchcmd.RunPlan(&orchcmd.RunOptions{App: a, Ref: rec.UID, Concurrency: 1, PerNode: 1, Verbose: opts.Verbose, Verb: "run"})
}
