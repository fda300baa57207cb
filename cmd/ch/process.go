package ch

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/solarops/solar/cmd/app"
	"github.com/solarops/solar/orch"
	"github.com/solarops/solar/planner"
	"github.com/solarops/solar/staging"
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
unfinished plan is refused, naming that plan and what to do: run or stop it,
or, when it is stale (a resource of it changed since), replace it with
--supersede. --supersede skips the old plan's tasks not started for those
entries (reason "superseded by NEW-UID"); its finished tasks keep their status,
an ERROR stays ERROR.

The plan records who processed it ($SOLAR_ACTOR, else user@host; orch list
shows it). Entries staged by someone else are taken too, with a note on
stderr per actor: "note: 3 entries staged by alice@laptop (a.update, ...)".

When nothing is staged for the selection, it says so on stderr, writes no plan
and exits 4, so that "solar ch process && solar orch run-once last" never runs
an older plan.` + "\n" + app.ExitHelp,
		Example: `  solar ch process
  solar ch process -t env=demo
  solar ch process -t 'env=demo & role=db' -t 'role=lb'
  solar ch process --supersede      # replace an unfinished (stale) plan's tasks
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
	me := opts.App.Actor()
	err := opts.App.Update(func(tx *store.Tx) error {
		var err error
		if res, err = orch.Process(tx, exprs, opts.Tags, opts.Supersede, opts.App.Now(), me); err != nil {
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
			sel = " for -t " + app.Escape(strings.Join(opts.Tags, " -t "))
		}
		msg := fmt.Sprintf("nothing staged%s; no plan written", sel)
		fmt.Fprintln(w, msg)
		return &app.NothingError{Msg: msg}
	}
	printSuperseded(w, rec.UID, superseded)
	for _, line := range othersNotes(res.StagedBy, me) {
		fmt.Fprintln(w, line)
	}
	staged := 0
	for _, n := range rec.Plan.Nodes {
		if n.Staged {
			staged++
		}
	}
	fmt.Fprintf(w, "plan %s: %s (%d staged, %d triggered by rules), %s\n",
		rec.UID, app.Count(len(rec.Plan.Nodes), "task"), staged, len(rec.Plan.Nodes)-staged, app.Count(len(rec.Plan.Edges), "edge"))
	for _, line := range summary(rec.Plan.Nodes) {
		fmt.Fprintln(w, "  "+line)
	}
	for _, warn := range rec.Plan.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warn)
	}
	_, err = fmt.Fprintln(opts.App.IO.Out, rec.UID)
	return err
}

// summary counts a plan's tasks by kind, as a reviewer reads a plan: what
// was staged, what rules added (which runs only if its event happens), and
// the second instances that resolved cycles.
func summary(nodes []planner.Node) []string {
	staged, triggered := map[string]int{}, map[string]int{}
	var again []string
	for _, n := range nodes {
		switch {
		case n.Instance > 0:
			again = append(again, n.ID)
		case n.Staged:
			staged[n.Action]++
		default:
			triggered[n.Action]++
		}
	}
	var out []string
	if line := byKind(staged); line != "" {
		out = append(out, "staged:             "+line)
	}
	if line := byKind(triggered); line != "" {
		out = append(out, "triggered by rules: "+line+" (each runs only if its event happens)")
	}
	if len(again) > 0 {
		sort.Strings(again)
		out = append(out, "cycles resolved:    "+app.Count(len(again), "second instance")+" ("+strings.Join(again, ", ")+")")
	}
	return out
}

// byKind renders counts as "2 run, 1 update, 1 remove, 3 other (restart,
// backup)": the lifecycle actions first, the others together.
func byKind(counts map[string]int) string {
	var parts []string
	for _, a := range []string{staging.ActionRun, staging.ActionUpdate, staging.ActionRemove} {
		if counts[a] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[a], a))
		}
	}
	other, names := 0, []string(nil)
	for a, n := range counts {
		if a != staging.ActionRun && a != staging.ActionUpdate && a != staging.ActionRemove {
			other += n
			names = append(names, a)
		}
	}
	if other > 0 {
		sort.Strings(names)
		parts = append(parts, fmt.Sprintf("%d other (%s)", other, strings.Join(names, ", ")))
	}
	return strings.Join(parts, ", ")
}
