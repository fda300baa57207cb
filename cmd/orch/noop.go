package orch

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/solarops/solar/cmd/app"
	"github.com/solarops/solar/orch"
	"github.com/solarops/solar/store"
)

// NoopOptions are the inputs of "solar orch noop".
type NoopOptions struct {
	App   *app.App
	Ref   string
	Tasks []string
}

// NewCmdNoop builds "solar orch noop".
func NewCmdNoop(a *app.App, runF func(*NoopOptions) error) *cobra.Command {
	opts := &NoopOptions{App: a}
	return &cobra.Command{
		Use:   "noop UID|last TASK...",
		Short: "Mark tasks NOOP so that they do not run; what depends on them proceeds",
		Long: `Mark tasks of a plan NOOP, before or during its run: they do not run, and what
depends on them proceeds as after any NOOP. A task ordered after one runs; a react
rule on "ok" or "noop" fires, one on "changed" does not (its task ends SKIPPED
"not triggered"). The report shows them NOOP "marked noop".
A marked task ran nothing, so it commits nothing: its staged entry stays staged,
and the next "solar ch process" plans it again (discard it with solar ch discard).
Tasks are named by id (mariadb.run#0) or action (mariadb.run) when the plan has
one instance of it. Only a task that has not started can be marked: one that
runs, ran or was skipped is refused, naming its status (one a stop skipped can,
as resume would run it). A run in progress, here or on another machine sharing
the store, sees the mark before it starts the task.` + "\n" + app.ExitHelp,
		Example: `  solar orch noop last keystone.run
  solar orch noop 20261122-100000-0001 haproxy.run#0 haproxy.run#1`,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) < 2 {
				return app.Usagef("give the plan (a uid, or last) and at least one TASK")
			}
			opts.Ref, opts.Tasks = args[0], args[1:]
			if runF != nil {
				return runF(opts)
			}
			return noopRun(opts)
		},
	}
}

func noopRun(opts *NoopOptions) error {
	var (
		uid string
		ids []string
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
		ids, err = orch.MarkNoop(tx, rec, opts.Tasks, opts.App.Now())
		return err
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.App.IO.Out, "plan %s: %s marked NOOP: %s\n", uid, app.Count(len(ids), "task"), strings.Join(ids, ", "))
	return nil
}
