package ch

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/solarops/solar/cmd/app"
	"github.com/solarops/solar/orch"
	"github.com/solarops/solar/store"
	"github.com/solarops/solar/tags"
)

// ProcessOptions are the inputs of "solar ch process".
type ProcessOptions struct {
	App       *app.App
	Tags      []string
	Supersede bool
}

// NewCmdProcess builds "solar ch process".
func NewCmdProcess(a *app.App, runF func(*ProcessOptions) error) *cobra.Command {
	opts := &ProcessOptions{App: a}
	c := &cobra.Command{
		Use:   "process [-t TAG_EXPR]...",
		Short: "Build a plan (action graph) from staged entries; print its uid",
		Long: `Select the staged entries whose tags match (all entries without -t; several -t
select the union), follow the react rules of their actions transitively, order
them with the dependency rules, resolve cycles by adding a second instance of an
action, and store the plan. Its uid is printed on stdout; "last" names it.

Entries outside the selection are neither planned nor touched, but a react rule
from a planned action still pulls its subscriber into the plan (as a triggered
task, which runs only if its event happens): the rule is the operator's
statement that the subscriber must follow.

Entries stay staged until their task succeeds. An entry already pending in an
unfinished plan is refused, naming that plan, unless --supersede, which skips
the old plan's task for it (reason "superseded").

When nothing is staged for the selection, it says so on stderr, writes no plan
and exits 4, so that "solar ch process && solar orch run-once last" never runs
an older plan.` + "\n" + app.ExitHelp,
		Example: `  solar ch process
  solar ch process -t env=demo
  solar ch process -t 'env=demo & role=db' -t 'role=lb'
  uid=$(solar ch process -t env=demo) && solar orch run-once "$uid"`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return processRun(opts)
		},
	}
	c.Flags().StringArrayVarP(&opts.Tags, "tag", "t", nil, "tag expression selecting staged entries (repeatable: union)")
	c.Flags().BoolVar(&opts.Supersede, "supersede", false, "take entries over from unfinished plans")
	return c
}

// errNothing rolls back a process that found nothing to plan.
var errNothing = errors.New("nothing staged")

func processRun(opts *ProcessOptions) error {
	exprs := make([]*tags.Expr, 0, len(opts.Tags))
	for _, t := range opts.Tags {
		e, err := tags.ParseExpr(t)
		if err != nil {
			return err
		}
		exprs = append(exprs, e)
	}
	var res *orch.ProcessResult
	err := opts.App.Update(func(tx *store.Tx) error {
		var err error
		if res, err = orch.Process(tx, exprs, opts.Tags, opts.Supersede, opts.App.Now()); err != nil {
			return err
		}
		if res.Record == nil {
			return errNothing // roll back: the file stays as it was
		}
		return nil
	})
	if err != nil && err != errNothing {
		return err
	}
	rec, superseded := res.Record, res.Superseded
	w := opts.App.IO.Err
	if rec == nil {
		sel := ""
		if len(opts.Tags) > 0 {
			sel = " for -t " + strings.Join(opts.Tags, " -t ")
		}
		msg := fmt.Sprintf("nothing staged%s; no plan written", sel)
		fmt.Fprintln(w, msg)
		return &app.NothingError{Msg: msg}
	}
	for _, uid := range superseded {
		fmt.Fprintf(w, "superseded entries of plan %s\n", uid)
	}
	staged := 0
	for _, n := range rec.Plan.Nodes {
		if n.Staged {
			staged++
		}
	}
	fmt.Fprintf(w, "plan %s: %s (%d staged, %d triggered by rules), %s\n",
		rec.UID, app.Count(len(rec.Plan.Nodes), "task"), staged, len(rec.Plan.Nodes)-staged, app.Count(len(rec.Plan.Edges), "edge"))
	for _, warn := range rec.Plan.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warn)
	}
	_, err = fmt.Fprintln(opts.App.IO.Out, rec.UID)
	return err
}
