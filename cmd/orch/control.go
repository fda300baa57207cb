package orch

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/solarops/solar/cmd/app"
	"github.com/solarops/solar/orch"
	"github.com/solarops/solar/store"
)

// ResetOptions are the inputs of "solar orch reset".
type ResetOptions struct {
	App *app.App
	Ref string
}

// NewCmdReset builds "solar orch reset".
func NewCmdReset(a *app.App, runF func(*ResetOptions) error) *cobra.Command {
	opts := &ResetOptions{App: a}
	return &cobra.Command{
		Use:     "reset [UID|last]",
		Short:   "Set every task of a plan back to PENDING without running it",
		Long:    "Set every task back to PENDING; nothing runs. Staged entries already committed stay committed.\nA plan that another process is running cannot be reset.\n" + app.ExitHelp,
		Example: "  solar orch reset last",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Ref = refArg(args)
			if runF != nil {
				return runF(opts)
			}
			return resetRun(opts)
		},
	}
}

func resetRun(opts *ResetOptions) error {
	var uid string
	err := opts.App.Update(func(tx *store.Tx) error {
		var err error
		if uid, err = orch.Resolve(tx, opts.Ref); err != nil {
			return err
		}
		if err := orch.RefuseRunning(tx, uid); err != nil {
			return err
		}
		rec, err := orch.Load(tx, uid)
		if err != nil {
			return err
		}
		states, err := orch.States(tx, rec)
		if err != nil {
			return err
		}
		return resetWhere(func(orch.State) bool { return true })(tx, rec, states)
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.App.IO.Out, "plan %s reset: every task is PENDING\n", uid)
	return nil
}

// StopOptions are the inputs of "solar orch stop".
type StopOptions struct {
	App  *app.App
	Ref  string
	Kill bool
}

// NewCmdStop builds "solar orch stop".
func NewCmdStop(a *app.App, runF func(*StopOptions) error) *cobra.Command {
	opts := &StopOptions{App: a}
	c := &cobra.Command{
		Use:   "stop [UID|last] [--kill]",
		Short: "Ask a running plan to stop: running tasks finish, the rest are SKIPPED",
		Long: `Ask the process running the plan (from another terminal, or another machine
sharing the store) to stop: tasks already running finish, tasks not started end
SKIPPED "stopped". "orch resume" continues. The request is a record in the
store, which the runner acts on wherever it runs: within a second on a
PostgreSQL store (it is notified), at its next look on a bbolt file, where a
runner of this machine is also sent SIGTERM, if its pid and start time match
its record. No other process is ever signalled.
With --kill, running tasks are killed too, as by a second Ctrl-C: their process
groups get SIGTERM, then SIGKILL (on SSH nodes as locally), they end ERROR
"killed", and "orch resume" runs them again.` + "\n" + app.ExitHelp,
		Example: "  solar orch stop last\n  solar orch stop last --kill",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Ref = refArg(args)
			if runF != nil {
				return runF(opts)
			}
			return stopRun(opts)
		},
	}
	c.Flags().BoolVar(&opts.Kill, "kill", false, "also kill the tasks that are running")
	return c
}

func stopRun(opts *StopOptions) error {
	db, err := opts.App.Open()
	if err != nil {
		return err
	}
	defer db.Close()
	res, err := orch.Stop(db, opts.Ref, opts.Kill)
	if err != nil {
		return err
	}
	w := opts.App.IO.Out
	switch {
	case !res.Running:
		return printIdle(opts.App, db, res.UID)
	case opts.Kill:
		fmt.Fprintf(w, "asked the runner of plan %s (pid %d on %s) to stop and kill its running tasks\n", res.UID, res.PID, runnerHost(res.Host))
	default:
		fmt.Fprintf(w, "asked the runner of plan %s (pid %d on %s) to stop\n", res.UID, res.PID, runnerHost(res.Host))
	}
	return nil
}

// runnerHost is the host a runner record names; a runner of an older solar
// named none.
func runnerHost(h string) string {
	if h == "" {
		return "an unnamed host"
	}
	return h
}

// FilterOptions are the inputs of "solar orch filter".
type FilterOptions struct {
	App    *app.App
	Ref    string
	Starts []string
	Ends   []string
}

// NewCmdFilter builds "solar orch filter".
func NewCmdFilter(a *app.App, runF func(*FilterOptions) error) *cobra.Command {
	opts := &FilterOptions{App: a}
	c := &cobra.Command{
		Use:   "filter [UID|last] --start TASK... --end TASK...",
		Short: "Keep only part of a plan; the rest is SKIPPED \"filtered\"",
		Long: `Keep part of the plan; every other pending task becomes SKIPPED "filtered".
With --end, a task is kept only if it leads to an end task (or is one). With
--start, a task is kept only if it is a start task, or all its predecessors are
kept: a task never runs after a predecessor that was filtered out (with
"after a.run c.run" and "after b.run c.run", --start a.run leaves c.run out).
Tasks are named by id (mariadb.run#0) or action (mariadb.run).
On a plan that is running, the run skips them too; a task it has already
started cannot be filtered out (the command fails and changes nothing).` + "\n" + app.ExitHelp,
		Example: `  solar orch filter last --start keystone.run --end haproxy.run#1
  solar orch filter last --end mariadb.run`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Ref = refArg(args)
			if len(opts.Starts) == 0 && len(opts.Ends) == 0 {
				return app.Usagef("give --start or --end tasks")
			}
			if runF != nil {
				return runF(opts)
			}
			return filterRun(opts)
		},
	}
	c.Flags().StringArrayVar(&opts.Starts, "start", nil, "task to start from (repeatable)")
	c.Flags().StringArrayVar(&opts.Ends, "end", nil, "task to end at (repeatable)")
	return c
}

func filterRun(opts *FilterOptions) error {
	var (
		uid     string
		skipped int
	)
	err := opts.App.Update(func(tx *store.Tx) error {
		var err error
		if uid, err = orch.Resolve(tx, opts.Ref); err != nil {
			return err
		}
		rec, err := orch.Load(tx, uid)
		if err != nil {
			return err
		}
		keep, err := orch.Filter(rec.Plan, splitCommas(opts.Starts), splitCommas(opts.Ends))
		if err != nil {
			return err
		}
		skipped, err = orch.FilterPlan(tx, rec, keep, opts.App.Now())
		return err
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.App.IO.Out, "plan %s: %s skipped as filtered\n", uid, app.Count(skipped, "task"))
	return nil
}

// splitCommas splits flag values given as "a,b" (not as CSV: a line break
// in a value must not silently drop what follows it).
func splitCommas(vals []string) []string {
	var out []string
	for _, v := range vals {
		out = append(out, strings.Split(v, ",")...)
	}
	return out
}
