package ch

import (
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/solarops/solar/cmd/app"
	"github.com/solarops/solar/events"
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
unfinished plan is refused, naming that plan, unless --supersede, which skips
the old plan's task for it (reason "superseded").

When nothing is staged for the selection, it says so on stderr, writes no plan
and exits 0.` + "\n" + app.ExitHelp,
		Example: `  solar ch process
  solar ch process -t env1
  solar ch process -t 'env=prod & role=db' -t 'role=lb'
  uid=$(solar ch process -t env1) && solar orch run-once "$uid"`,
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

func selectEntries(tx *store.Tx, exprs []*tags.Expr) ([]*staging.Entry, error) {
	if len(exprs) == 0 {
		return staging.List(tx)
	}
	seen := map[string]bool{}
	var out []*staging.Entry
	for _, e := range exprs {
		ents, err := staging.Select(tx, e)
		if err != nil {
			return nil, err
		}
		for _, en := range ents {
			if !seen[en.Key] {
				seen[en.Key] = true
				out = append(out, en)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out, nil
}

func processRun(opts *ProcessOptions) error {
	exprs := make([]*tags.Expr, 0, len(opts.Tags))
	for _, t := range opts.Tags {
		e, err := tags.ParseExpr(t)
		if err != nil {
			return err
		}
		exprs = append(exprs, e)
	}
	var (
		rec        *orch.Record
		superseded []string
	)
	err := opts.App.Update(func(tx *store.Tx) error {
		ents, err := selectEntries(tx, exprs)
		if err != nil || len(ents) == 0 {
			return err
		}
		keys := make([]string, len(ents))
		for i, e := range ents {
			keys[i] = e.Key
		}
		pending, err := orch.Pending(tx)
		if err != nil {
			return err
		}
		var clash []string
		for _, k := range keys {
			if uid, ok := pending[k]; ok {
				clash = append(clash, k+" (plan "+uid+")")
			}
		}
		if len(clash) > 0 {
			if !opts.Supersede {
				return fmt.Errorf("%w: %s; run or stop that plan, or pass --supersede", orch.ErrPending, strings.Join(clash, ", "))
			}
			if superseded, err = orch.Supersede(tx, keys, opts.App.Now()); err != nil {
				return err
			}
		}
		rules, err := events.List(tx)
		if err != nil {
			return err
		}
		in := planner.Input{Rules: rules, Entries: make([]planner.Entry, len(ents))}
		for i, e := range ents {
			in.Entries[i] = planner.Entry{Key: e.Key, Resource: e.Resource, Action: e.Action}
		}
		p, err := planner.Build(in)
		if err != nil {
			return err
		}
		uid, err := orch.NewUID(tx, opts.App.Now())
		if err != nil {
			return err
		}
		rec = &orch.Record{UID: uid, CreatedAt: opts.App.Now().UTC(), Selection: opts.Tags, Plan: p}
		if rec.Selection == nil {
			rec.Selection = []string{}
		}
		return orch.Save(tx, rec)
	})
	if err != nil {
		return err
	}
	w := opts.App.IO.Err
	if rec == nil {
		sel := "anything"
		if len(opts.Tags) > 0 {
			sel = "-t " + strings.Join(opts.Tags, " -t ")
		}
		fmt.Fprintf(w, "nothing staged for %s; no plan written\n", sel)
		return nil
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
	fmt.Fprintf(w, "plan %s: %d tasks (%d staged, %d triggered by rules), %d edges\n",
		rec.UID, len(rec.Plan.Nodes), staged, len(rec.Plan.Nodes)-staged, len(rec.Plan.Edges))
	for _, warn := range rec.Plan.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warn)
	}
	_, err = fmt.Fprintln(opts.App.IO.Out, rec.UID)
	return err
}
